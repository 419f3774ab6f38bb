import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { AppConfig } from './config/app-config';
import { ConfigError } from './config/environment';
import { ConnectionMonitor } from './database/connection-monitor';
import { DatabaseService } from './database/database.service';
import { SubscriptionRepository } from './notifications/subscription.repository';
import { WorkspaceRepository } from './workspaces/workspace.repository';

/**
 * `npm run secrets:reencrypt [-- --batch-size N]` (in the image: `node dist/secrets-reencrypt.js`): moves every stored
 * subscription secret, and every workspace's API key and webhook secret, onto the newest key of SECRETS_ENCRYPTION_KEY (the first), plaintext ones included, and drops
 * previous secrets whose overlap has ended. Same environment as the service; safe beside running replicas (a row
 * written meanwhile is left as they wrote it), one batch committed at a time, so it can be stopped and run again.
 * Exits 0 once nothing is left on another key, 1 otherwise.
 */
const logger = new Logger('SecretsReencrypt');
const DEFAULT_BATCH_SIZE = 100;

function batchSize(argv: string[]): number {
  const at = argv.indexOf('--batch-size');
  if (at < 0) return DEFAULT_BATCH_SIZE;
  const size = Number(argv[at + 1]);
  if (!Number.isInteger(size) || size < 1 || size > 10_000) throw new ConfigError(['--batch-size must be a whole number from 1 to 10000']);
  return size;
}

async function main(): Promise<number> {
  const config = AppConfig.fromEnvironment(process.env);
  const size = batchSize(process.argv.slice(2));
  const newest = config.secretsEncryptionKeys[0];
  if (!newest) throw new ConfigError(['SECRETS_ENCRYPTION_KEY is not set: there is no key to encrypt with']);
  if (!config.databaseUrl) throw new ConfigError(["DATABASE_URL is not set: give the service's database"]);
  const database = new DatabaseService(config, new ConnectionMonitor());
  try {
    // The service migrates at start-up; this only runs against a schema it knows.
    const pending = await database.pendingMigrations();
    if (pending.length > 0) throw new Error(`The database lacks migrations (${pending.join(', ')}): start the service of this version first`);
    const subscriptions = new SubscriptionRepository(database, config);
    let after: string | null = null;
    let resealed = 0;
    let skipped = 0;
    for (;;) {
      const batch = await subscriptions.resealBatch(after, size);
      if (batch.lastId === null) break;
      resealed += batch.resealed;
      skipped += batch.skipped;
      after = batch.lastId;
      logger.log(`${resealed} secret(s) re-encrypted with key "${newest.id}" so far (up to subscription ${after})`);
    }
    // The workspaces' API keys and webhook secrets: a row per workspace, thousands at most, in one pass.
    const workspaces = await new WorkspaceRepository(database, config).resealAll();
    logger.log(`${workspaces.resealed} workspace(s) re-encrypted with key "${newest.id}"`);
    const left = (await subscriptions.secretsNotOnNewestKey()) + workspaces.left;
    const summary = `${resealed} secret(s) re-encrypted with key "${newest.id}"${skipped > 0 ? `, ${skipped} subscription(s) changed meanwhile and left` : ''}`;
    if (left > 0) {
      logger.error(`${summary}; ${left} secret(s) are still on another key or in plaintext: run it again`);
      return 1;
    }
    logger.log(`${summary}; every subscription secret is encrypted with key "${newest.id}": older keys can leave SECRETS_ENCRYPTION_KEY`);
    return 0;
  } finally {
    await database.onApplicationShutdown();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    logger.error(error instanceof ConfigError ? error.message : `Re-encryption failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
