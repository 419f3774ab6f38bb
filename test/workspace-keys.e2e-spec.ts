import type { Pool } from 'pg';
import { RunningService } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';

/**
 * Tables that hold no workspace's data, each with why: everything else is a workspace's, and must be ready to be
 * split by workspace (hash partitions, or Citus distributing by workspace_id).
 */
const DEPLOYMENT_TABLES: Record<string, string> = {
  _prisma_migrations: 'the schema’s own history',
  data_migration: 'a background data migration’s progress, which walks every workspace’s rows (its cursor names the row)',
  subscription: 'a subscriber’s endpoint, which may follow several workspaces',
  notification: 'a subscriber’s outbox: keyed by its subscription (it carries the resource’s workspace_id)',
  notification_attempt: 'a subscriber’s delivery history, like its notifications',
  worker_heartbeat: 'the worker pools alive in the deployment',
  pozy_budget: 'a Pozy API key’s budget, which workspaces sharing that key share',
  dead_letter_replay_run: 'an operator’s bulk replay, across the queue',
  read_token: 'a reader’s credential, which may read several workspaces (or every one)',
  workspace: 'the registry itself: its id is the workspace_id of every row it owns',
  ops_event: 'an operational event of the deployment (a subscriber, a Pozy key, an objective), naming its workspace when it has one',
  consumer: 'a named reader of the feed, which may follow several workspaces (or every one), like a read token',
  consumer_partition: 'a named consumer’s committed positions, keyed by the consumer',
};

describe('the schema is ready to be split by workspace', () => {
  let spec: ServiceSpec;
  let service: RunningService;
  let pool: Pool;

  beforeAll(async () => {
    // Its start applies every migration.
    spec = await startSpec('workspace_keys', { env: { ROLE: 'api' } });
    service = spec.service;
    pool = service.pool;
  });

  afterAll(async () => {
    await spec?.close();
  });

  const workspaceTables = async () =>
    (
      await pool.query<{ table: string }>(
        `SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`,
      )
    ).rows
      .map((r) => r.table)
      .filter((table) => !(table in DEPLOYMENT_TABLES));

  it('has workspace tables to check, and every deployment table it exempts exists', async () => {
    const all = (await pool.query<{ table: string }>(`SELECT tablename AS table FROM pg_tables WHERE schemaname = 'public'`)).rows.map(
      (r) => r.table,
    );
    expect(all).toEqual(expect.arrayContaining(Object.keys(DEPLOYMENT_TABLES)));
    expect(await workspaceTables()).toEqual(
      expect.arrayContaining([
        'account',
        'backfill_run',
        'change',
        'dead_letter',
        'pozy_event',
        'post',
        'reconcile_request',
        'sweep_run',
        'sweep_seen',
      ]),
    );
  });

  it('gives every workspace table a workspace_id that no insert can leave out', async () => {
    const { rows } = await pool.query<{ table: string; not_null: boolean; has_default: boolean }>(
      `SELECT c.relname AS table, a.attnotnull AS not_null, a.atthasdef AS has_default
         FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped
        WHERE c.relname = ANY($1)`,
      [await workspaceTables()],
    );
    const tables = await workspaceTables();
    expect(rows.map((r) => r.table).sort()).toEqual(tables);
    expect(rows.filter((r) => !r.not_null || r.has_default)).toEqual([]);
  });

  it('leads every primary key and unique index of a workspace table with workspace_id', async () => {
    const { rows } = await pool.query<{ index: string; table: string; first: string }>(
      `SELECT i.relname AS index, t.relname AS table, a.attname AS first
         FROM pg_index x
         JOIN pg_class i ON i.oid = x.indexrelid
         JOIN pg_class t ON t.oid = x.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace
         LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
        WHERE n.nspname = 'public' AND (x.indisunique OR x.indisprimary) AND t.relname = ANY($1)
        ORDER BY 1`,
      [await workspaceTables()],
    );
    expect(rows.length).toBeGreaterThanOrEqual(9);
    expect(rows.filter((r) => r.first !== 'workspace_id')).toEqual([]);
  });

  it('has no foreign key from a workspace table that could cross workspaces', async () => {
    const { rows } = await pool.query<{ constraint: string; table: string; columns: string[] }>(
      `SELECT con.conname AS constraint, t.relname AS table,
              ARRAY(SELECT a.attname FROM unnest(con.conkey) k JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k)::text[] AS columns
         FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid
        WHERE con.contype = 'f' AND t.relname = ANY($1)`,
      [await workspaceTables()],
    );
    expect(rows.filter((r) => !r.columns.includes('workspace_id'))).toEqual([]);
  });
});
