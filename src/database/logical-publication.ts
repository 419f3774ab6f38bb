import { Logger } from '@nestjs/common';
import { sql } from 'kysely';
import type { DB } from '../generated/kysely/database';
import { advisoryXactLock, LockKey } from './advisory-lock';
import type { Db } from './database.service';

/**
 * What a CDC consumer (Debezium, Sequin) reads: the mirror's state, one row per post and per account, keyed by their
 * primary key (workspace_id, id). Not `change`: its rows get their position in a later UPDATE and retention DELETEs
 * them, so a consumer of it would see every change three times and prunes as deletions (docs/cdc.md).
 */
export const PUBLISHED_TABLES = ['post', 'account'] as const satisfies readonly (keyof DB)[];

/** Every action: the service never truncates these tables, but a consumer should hear it if an operator does. */
const PUBLISH = 'insert, update, delete, truncate';

/** A boot waits at most this long for the tables' locks (another transaction may hold one for long). */
const LOCK_TIMEOUT = '10s';

const INSUFFICIENT_PRIVILEGE = '42501';

/** How the publication stood after the boot's check (GET /health/ready shows it). */
export interface PublicationState {
  publication: string;
  /** `ready`: in place and readable; `wal_level`: in place, but the server writes no logical WAL; `failed`: not in place. */
  state: 'ready' | 'wal_level' | 'failed';
  walLevel: string | null;
  /** What the boot did: created it, changed it, or found it as it should be. */
  action: 'created' | 'altered' | 'unchanged' | null;
  problem: string | null;
}

interface ExistingPublication {
  all_tables: boolean;
  actions: string;
}

interface PublishedRelation {
  oid: number;
  /** A row filter or a column list: the consumer would not see every row, or every column. */
  narrowed: boolean;
}

interface TableIdentity {
  name: string;
  /** pg_class.relreplident: `d` default (the primary key), `f` full, `i` an index, `n` nothing. */
  identity: string;
  has_primary_key: boolean;
}

/**
 * Creates the publication `name` for PUBLISHED_TABLES, or sets its table list and actions back to those, and makes
 * sure each table has a replica identity (without one, PostgreSQL refuses every UPDATE and DELETE of a published
 * table). Serialised across replicas by an advisory lock, in one transaction: a no-op once it is in place. Never
 * throws: the mirror runs without it, and the problem is logged and answered in the state.
 */
export async function ensureLogicalPublication(db: Db, name: string, logger: Logger): Promise<PublicationState> {
  let walLevel: string | null = null;
  try {
    const action = await db.transaction().execute(async (trx) => {
      await advisoryXactLock(trx, LockKey.LogicalPublication);
      await sql`SELECT set_config('lock_timeout', ${LOCK_TIMEOUT}, true)`.execute(trx);
      walLevel = (await sql<{ level: string }>`SELECT current_setting('wal_level') AS level`.execute(trx)).rows[0].level;
      await ensureReplicaIdentity(trx, logger);
      return ensurePublication(trx, name);
    });
    if (action !== 'unchanged') logger.log(`Logical replication: publication ${name} ${action} for tables ${PUBLISHED_TABLES.join(', ')}`);
    if (walLevel !== 'logical') {
      const problem =
        `wal_level is "${walLevel}", not "logical": the publication ${name} is in place, but no logical replication slot can ` +
        `read it (Debezium, Sequin) until PostgreSQL runs with wal_level=logical (postgresql.conf, then a restart of PostgreSQL)`;
      logger.warn(problem);
      return { publication: name, state: 'wal_level', walLevel, action, problem };
    }
    return { publication: name, state: 'ready', walLevel, action, problem: null };
  } catch (error) {
    const problem = describeFailure(name, error);
    logger.error(problem);
    return { publication: name, state: 'failed', walLevel, action: null, problem };
  }
}

async function ensureReplicaIdentity(trx: Db, logger: Logger): Promise<void> {
  const { rows } = await sql<TableIdentity>`
    SELECT c.relname AS name, c.relreplident AS identity,
           EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) AS has_primary_key
      FROM pg_class c
     WHERE c.oid = ANY (ARRAY[${sql.join(PUBLISHED_TABLES.map((table) => sql`to_regclass(${table})`))}])`.execute(trx);
  for (const table of rows) {
    // The primary key (workspace_id, id) is what a consumer keys a row by, and all an UPDATE's or DELETE's old row
    // needs to carry. FULL or an index an operator chose is left as it is.
    const wanted = table.has_primary_key ? 'DEFAULT' : 'FULL';
    if (table.identity === 'n' || (table.identity === 'd' && !table.has_primary_key)) {
      await sql`ALTER TABLE ${sql.table(table.name)} REPLICA IDENTITY ${sql.raw(wanted)}`.execute(trx);
      logger.log(`Logical replication: table ${table.name} given replica identity ${wanted}`);
    }
  }
}

async function ensurePublication(trx: Db, name: string): Promise<'created' | 'altered' | 'unchanged'> {
  const [{ version }] = (await sql<{ version: number }>`SELECT current_setting('server_version_num')::int AS version`.execute(trx)).rows;
  // Row filters, column lists and schemas in publications (what is checked below) came with PostgreSQL 15.
  if (version < 150000) throw new Error(`PostgreSQL ${Math.floor(version / 10000)} is too old: LOGICAL_PUBLICATION needs PostgreSQL 15 or newer`);
  const tables = sql.join(PUBLISHED_TABLES.map((table) => sql.table(table)));
  const [existing] = (
    await sql<ExistingPublication>`
      SELECT puballtables AS all_tables,
             concat_ws(', ', CASE WHEN pubinsert THEN 'insert' END, CASE WHEN pubupdate THEN 'update' END,
                       CASE WHEN pubdelete THEN 'delete' END, CASE WHEN pubtruncate THEN 'truncate' END) AS actions
        FROM pg_publication WHERE pubname = ${name}`.execute(trx)
  ).rows;
  if (!existing) {
    await sql`CREATE PUBLICATION ${sql.id(name)} FOR TABLE ${tables} WITH (publish = ${sql.lit(PUBLISH)})`.execute(trx);
    return 'created';
  }
  if (existing.all_tables) {
    throw new Error(
      `the publication ${name} exists FOR ALL TABLES, which would publish every table pozy-sync keeps (secrets included); ` +
        `drop it, or set LOGICAL_PUBLICATION to another name`,
    );
  }
  const published = (
    await sql<PublishedRelation>`
      SELECT r.prrelid::int AS oid, r.prqual IS NOT NULL OR r.prattrs IS NOT NULL AS narrowed
        FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
       WHERE p.pubname = ${name}`.execute(trx)
  ).rows;
  const oids = sql.join(PUBLISHED_TABLES.map((table) => sql`to_regclass(${table})::oid::int`));
  const wanted = (await sql<{ oid: number }>`SELECT unnest(ARRAY[${oids}]) AS oid`.execute(trx)).rows.map((row) => row.oid);
  const sameTables = published.length === wanted.length && published.every((relation) => wanted.includes(relation.oid) && !relation.narrowed);
  // A schema in the publication (FOR TABLES IN SCHEMA) would publish more than the list says.
  const [{ schemas }] = (
    await sql<{ schemas: number }>`
      SELECT count(*)::int AS schemas FROM pg_publication_namespace s JOIN pg_publication p ON p.oid = s.pnpubid
       WHERE p.pubname = ${name}`.execute(trx)
  ).rows;
  let action: 'altered' | 'unchanged' = 'unchanged';
  if (!sameTables || schemas > 0) {
    await sql`ALTER PUBLICATION ${sql.id(name)} SET TABLE ${tables}`.execute(trx);
    action = 'altered';
  }
  if (existing.actions !== PUBLISH) {
    await sql`ALTER PUBLICATION ${sql.id(name)} SET (publish = ${sql.lit(PUBLISH)})`.execute(trx);
    action = 'altered';
  }
  return action;
}

function describeFailure(name: string, error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  const text = message ?? String(error);
  if (code === INSUFFICIENT_PRIVILEGE) {
    return (
      `Logical replication: the database user may not create or change the publication ${name} (${text}). ` +
      `CREATE PUBLICATION needs the CREATE privilege on the database and ownership of the tables ${PUBLISHED_TABLES.join(', ')} ` +
      `(a superuser has both): run pozy-sync as the tables' owner, or have their owner run ` +
      `CREATE PUBLICATION ${name} FOR TABLE ${PUBLISHED_TABLES.join(', ')}; the mirror keeps running without it`
    );
  }
  return `Logical replication: the publication ${name} could not be put in place (${text}); the mirror keeps running without it`;
}
