import { Logger } from '@nestjs/common';
import { AppConfig } from './config/app-config';
import { ConfigError } from './config/environment';
import { ConnectionMonitor } from './database/connection-monitor';
import { MIGRATIONS_DIR } from './database/database.service';
import { FailoverPool } from './database/failover-pool';
import { MIGRATION_LOCK_RETRIES, Migrator } from './database/migrator';

/**
 * `npm run migrate` (in the image: `node dist/migrate.js`): applies the migrations this release ships that the
 * database lacks, and exits: 0 once the schema is this release's (or newer), 1 on a failure, with what was applied and
 * what is left. The step a fleet runs before its replicas roll (MIGRATE_ON_START=false; docs/operations.md,
 * Upgrades). `--status` only reports: exit 0 when nothing is pending, 3 when something is. Same environment as the
 * service; safe beside running replicas and beside another migrate (one runs at a time, under a lock).
 */
const logger = new Logger('Migrate');
/** Exit code of `--status` with migrations pending: a script can tell it from a failure (1). */
const PENDING = 3;

async function main(): Promise<number> {
  const config = AppConfig.fromEnvironment(process.env);
  Logger.overrideLogger(config.logLevels);
  const statusOnly = process.argv.slice(2).includes('--status');
  if (!config.databaseUrl) throw new ConfigError(["DATABASE_URL is not set: the embedded PostgreSQL is migrated by the service's own start"]);
  const pool = new FailoverPool({ endpoint: config.databaseEndpoint(), name: 'migrate', observer: new ConnectionMonitor(), max: 1, keepAlive: true });
  try {
    const migrator = new Migrator(pool, MIGRATIONS_DIR, { lockTimeoutMs: config.migrationLockTimeoutMs, lockRetries: MIGRATION_LOCK_RETRIES });
    const before = await migrator.status();
    const unknown = before.unknown.length > 0 ? `; ${before.unknown.length} applied that this release does not ship (a newer release's)` : '';
    logger.log(`${before.pending.length} migration(s) pending${before.pending.length > 0 ? ` (${before.pending.join(', ')})` : ''}${unknown}`);
    if (statusOnly) return before.pending.length > 0 ? PENDING : 0;
    const began = Date.now();
    const result = await migrator.migrate();
    logger.log(
      `Applied ${result.applied.length} migration(s) in ${Date.now() - began} ms; ${result.alreadyApplied} were already applied. ` +
        "The schema is this release's: replicas with MIGRATE_ON_START=false start now.",
    );
    return 0;
  } finally {
    await pool.end();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    logger.error(error instanceof ConfigError ? error.message : `Migration failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
