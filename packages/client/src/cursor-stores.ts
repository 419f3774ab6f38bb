import { open, readFile, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Where followChanges keeps its place in the feed. `save` is called after every page has been handled, so a
 * crash replays at most the page that was being handled (at least once: keep the highest `sequence` per resource).
 */
export interface CursorStore {
  /** The stored cursor; undefined on the first start (followChanges then reads the mirror whole). */
  load(): Promise<string | undefined>;
  save(cursor: string): Promise<void>;
}

/** The cursor in a file, replaced atomically: a crash leaves the old cursor or the new one, never a torn file. */
export class FileCursorStore implements CursorStore {
  constructor(private readonly path: string) {}

  async load(): Promise<string | undefined> {
    try {
      const { cursor } = JSON.parse(await readFile(this.path, 'utf8')) as { cursor?: unknown };
      if (typeof cursor !== 'string') throw new Error(`${this.path} holds no cursor`);
      return cursor;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async save(cursor: string): Promise<void> {
    await writeFileAtomically(this.path, JSON.stringify({ cursor }));
  }
}

/** Writes `text` to a temporary file beside `path`, syncs it, and renames it over `path`. */
export async function writeFileAtomically(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.tmp`);
  const file = await open(temp, 'w');
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, path);
  // The rename is durable once the directory is synced (not possible on every platform).
  const directory = await open(dirname(path), 'r').catch(() => undefined);
  await directory?.sync().catch(() => undefined);
  await directory?.close();
}

/** What PostgresCursorStore needs of a connection or pool: node-postgres's `Pool`, `PoolClient` and `Client` all fit. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Cursors in a PostgreSQL table (one row per name, created if missing). To apply a page and move the cursor in one
 * transaction, call `saveIn(transaction, cursor)` from your handler and give followChanges a store whose `save` does
 * nothing; otherwise `save` runs on the pool after each page.
 */
export class PostgresCursorStore implements CursorStore {
  private readonly table: string;
  private ready: Promise<void> | undefined;

  constructor(private readonly options: { pool: Queryable; name: string; table?: string }) {
    this.table = options.table ?? 'pozy_sync_cursor';
    if (!IDENTIFIER.test(this.table)) throw new Error(`table must be a plain lower-case identifier, not ${JSON.stringify(this.table)}`);
  }

  async load(): Promise<string | undefined> {
    await this.ensureTable();
    const { rows } = await this.options.pool.query(`SELECT cursor FROM ${this.table} WHERE name = $1`, [this.options.name]);
    const cursor = rows[0]?.cursor;
    return typeof cursor === 'string' ? cursor : undefined;
  }

  async save(cursor: string): Promise<void> {
    await this.saveIn(this.options.pool, cursor);
  }

  /** Stores the cursor through `db`: inside your own transaction when `db` is the client that holds it. */
  async saveIn(db: Queryable, cursor: string): Promise<void> {
    await this.ensureTable();
    await db.query(
      `INSERT INTO ${this.table} (name, cursor, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET cursor = EXCLUDED.cursor, updated_at = EXCLUDED.updated_at`,
      [this.options.name, cursor],
    );
  }

  private ensureTable(): Promise<void> {
    this.ready ??= this.options.pool
      .query(`CREATE TABLE IF NOT EXISTS ${this.table} (name text PRIMARY KEY, cursor text NOT NULL, updated_at timestamptz NOT NULL)`)
      .then(
        () => undefined,
        (error: unknown) => {
          this.ready = undefined;
          throw error;
        },
      );
    return this.ready;
  }
}
