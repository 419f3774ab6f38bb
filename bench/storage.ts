/**
 * The storage scenario of npm run bench (`BENCH_SCENARIOS=storage`): the bytes on disk a mirrored post costs, against
 * the bytes of the JSON Pozy sent for it.
 *
 * The simulator seeds a varied workspace (seedExisting: drafts, scheduled, published, partial, failed and cancelled
 * posts of a past year, on 1 to several accounts each); the built service imports it on its first start. Then posts
 * change `BENCH_STORAGE_CHANGES` times each in Pozy, one round at a time: each one's content edited in the simulator
 * and a signed webhook for it sent by the simulator (its status's event, the post block as Pozy sends it), which the
 * service receives, stores, reconciles (reads the post from the simulator's API) and writes; a round ends when the
 * mirror holds every changed post's new version, and every table is vacuumed (as autovacuum would be, its default
 * threshold being a fifth of a table's rows dead). The tables are measured (after `VACUUM (ANALYZE)` of each, so the
 * files are settled as autovacuum would leave them; bench/table-storage.ts) right after the import and after the
 * changes: heap, TOAST and indexes of each table a post touches (`post`, its feed entries `change`, its versions
 * `resource_version`, its events `pozy_event`) and of the other tables it leaves rows in, per post, against the JSON.
 *
 * Last, retention: every row is dated back past the longest window (an UPDATE of its time column), the prune runs
 * (`POST /admin/retention`), and the tables are measured after a `VACUUM FULL` (so the figures are what is kept, not
 * the files a live system would keep and reuse): what a post costs once its changes have aged out.
 *
 * The changes go to `BENCH_STORAGE_CHANGED_POSTS` of the posts (every k-th in Pozy's order, so as varied as the
 * whole): the service reconciles 30 to 50 changes a second on a busy 2-core machine, so 200,000 of them would take
 * over an hour there. A post after N changes is then the import's bytes per post plus the growth the changed
 * posts made, per changed post; with every post changed (BENCH_STORAGE_CHANGED_POSTS = BENCH_STORAGE_POSTS) that is
 * exactly the tables' bytes divided by the posts.
 *
 *   BENCH_STORAGE_POSTS (20000), BENCH_STORAGE_ACCOUNTS (400), BENCH_STORAGE_CHANGES (changes per post; 10),
 *   BENCH_STORAGE_CHANGED_POSTS (the posts changed; 2000, at most BENCH_STORAGE_POSTS),
 *   BENCH_STORAGE_WORKERS (the service's WORKER_CONCURRENCY; 10), BENCH_STORAGE_RETENTION (1: the retention step; 0: skip it)
 */
/* eslint-disable no-console -- a command-line report */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { PozySimulator } from '../simulator/simulator';
import type { PozyEvent, PozyEventType, Post, PostStatus } from '../simulator/world/pozy-shapes';
import { waitForHttp } from './net';
import { intSetting, sleep, startBuiltService, stopProcess, withDatabase } from './processes';
import { IndexStorage, indexStorage, schemaTables, sumStorage, tableStorage, TableStorage, vacuumTables } from './table-storage';

const SECRET = 'whsec_bench_storage';
const API_KEY = 'sk_bench_storage';
const ADMIN_TOKEN = 'bench-admin-token-storage-0123456789';
/** Pozy's budget is not what this scenario measures: the simulator's and the service's at their largest. */
const RATE_PER_MINUTE = 100_000;
/** The tables a post's own data lands in, with the retention window (variable and default days) that bounds each. */
const POST_TABLES = [
  { table: 'post', bound: 'one row a post, rewritten in place (VACUUM reuses the space)' },
  { table: 'change', bound: 'CHANGE_RETENTION_DAYS (7)' },
  { table: 'resource_version', bound: 'HISTORY_RETENTION_DAYS (30), the newest version kept' },
  { table: 'pozy_event', bound: 'EVENT_RETENTION_DAYS (30)' },
] as const;
/** Per table pruned by retention: its time column (dated back in the retention step). */
const DATED_COLUMNS: Record<string, string> = {
  change: 'changed_at',
  resource_version: 'read_at',
  pozy_event: 'received_at',
  reconcile_read: 'at',
};
/** Longer than every default window (30 days), so the retention step prunes everything a window can. */
const DATE_BACK = '40 days';

const settings = {
  posts: intSetting('BENCH_STORAGE_POSTS', 20_000),
  accounts: intSetting('BENCH_STORAGE_ACCOUNTS', 400),
  changes: intSetting('BENCH_STORAGE_CHANGES', 10, 0),
  changedPosts: intSetting('BENCH_STORAGE_CHANGED_POSTS', 2_000),
  workers: intSetting('BENCH_STORAGE_WORKERS', 10),
  retention: intSetting('BENCH_STORAGE_RETENTION', 1, 0) > 0,
};

/** What Pozy sent for the changes: JSON bytes (UTF-8), in total. */
interface JsonSent {
  /** The posts as GET /v1/posts/{id} answered for the changes' reads. */
  postReads: number;
  /** Webhook envelopes. */
  events: number;
}

interface Snapshot {
  tables: TableStorage[];
  /** The indexes of a post's own tables, largest first. */
  indexes: Map<string, IndexStorage[]>;
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** The event Pozy sends for a post in this status (a draft's edit has none of its own: `post.scheduled` stands in). */
function eventType(status: PostStatus): PozyEventType {
  switch (status) {
    case 'published':
    case 'partial':
    case 'failed':
    case 'cancelled':
    case 'scheduled':
      return `post.${status}`;
    default:
      return 'post.scheduled';
  }
}

/** A webhook envelope for the post as it now stands, in the shape of Pozy's post block (simulator/world/views.ts). */
function eventFor(post: Post): PozyEvent {
  return {
    id: randomUUID(),
    event: eventType(post.status),
    timestamp: post.updatedAt,
    post: {
      id: post._id,
      content: post.content,
      status: post.status,
      scheduledFor: post.scheduledFor,
      publishedAt: post.publishedAt,
      platforms: post.platforms.map((t) => ({
        platform: t.platform,
        status: t.status,
        accountId: typeof t.accountId === 'string' ? t.accountId : t.accountId._id,
        platformPostId: t.platformPostId,
        publishedUrl: t.platformPostUrl,
        error: t.errorMessage,
        errorCategory: t.errorCategory,
        errorSource: t.errorSource,
      })),
    },
  };
}

export async function runStorageScenario(serverUrl: string): Promise<void> {
  const changed = Math.min(settings.changedPosts, settings.posts);
  console.log(
    `storage: a workspace of ${settings.posts.toLocaleString('en')} posts and ${settings.accounts.toLocaleString('en')} accounts imported, ` +
      `then ${settings.changes} changes to each of ${changed.toLocaleString('en')} of its posts through webhooks; bytes on disk per post ` +
      `(after VACUUM (ANALYZE) of each table) against the JSON Pozy sent`,
  );
  const sim = await PozySimulator.start({
    apiKey: API_KEY,
    seed: 38,
    rateLimitPerMinute: RATE_PER_MINUTE,
    webhook: { url: 'http://127.0.0.1:9/not-yet', secret: SECRET },
  });
  try {
    sim.world.seedExisting({ posts: settings.posts, accounts: settings.accounts });
    await withDatabase(serverUrl, `pozy_sync_bench_storage_${settings.posts}`, (url) => measure(sim, url, changed));
  } finally {
    await sim.stop();
  }
}

async function measure(sim: PozySimulator, databaseUrl: string, changedPosts: number): Promise<void> {
  const { child: service, url: baseUrl } = await startBuiltService(
    databaseUrl,
    { url: sim.url, apiKey: API_KEY, webhookSecret: SECRET, ratePerMinute: RATE_PER_MINUTE },
    { ADMIN_TOKEN, RETENTION_CRON: 'off', SPOOL_DIR: `.data/bench-spool-storage-${settings.posts}`, WORKER_CONCURRENCY: String(settings.workers) },
  );
  const db = new Client({ connectionString: databaseUrl });
  try {
    await waitForHttp(`${baseUrl}/health/ready`, 60_000);
    await db.connect();
    sim.setWebhookUrl(`${baseUrl}/webhooks/pozy`);
    const alive = () => {
      if (service.exitCode !== null || service.signalCode !== null) {
        throw new Error(`the service stopped (${service.signalCode ?? `exit ${service.exitCode}`})`);
      }
    };

    // ---- the import ----
    const started = Date.now();
    for (;;) {
      alive();
      const run = (await db.query<{ status: string }>("SELECT status FROM sweep_run WHERE kind = 'import' ORDER BY started_at DESC LIMIT 1")).rows[0];
      if (run && run.status !== 'running') {
        if (run.status !== 'succeeded') throw new Error(`the import ended ${run.status}`);
        break;
      }
      await sleep(250);
    }
    await settled(db);
    const posts = sim.world.snapshot().posts;
    const n = posts.length;
    const importJson = posts.reduce((sum, post) => sum + jsonBytes(post), 0) / n;
    console.log(
      `  imported ${n.toLocaleString('en')} posts in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        `a post's JSON as Pozy served it: ${Math.round(importJson)} bytes on average`,
    );
    const tables = await schemaTables(db);
    const afterImport = await snapshot(db, tables);
    report(`after the import`, afterImport, n, importJson);

    // ---- the changes ----
    if (settings.changes > 0) {
      const all = sim.world.listPosts().map((post) => post._id);
      const step = all.length / changedPosts;
      const ids = Array.from({ length: changedPosts }, (_, i) => all[Math.floor(i * step)]);
      const sent: JsonSent = { postReads: 0, events: 0 };
      const changing = Date.now();
      for (let round = 1; round <= settings.changes; round++) {
        alive();
        await changeRound(sim, db, ids, round, sent, alive);
        // As autovacuum would on a table a tenth of whose rows changed (its default threshold is a fifth): the dead
        // rows' space is free for the next round's writes.
        await vacuumTables(db, tables);
        console.log(
          `  round ${round} of ${settings.changes}: ${ids.length.toLocaleString('en')} posts changed and mirrored ` +
            `(${((Date.now() - changing) / 1000).toFixed(0)} s)`,
        );
      }
      await settled(db);
      const afterChanges = await snapshot(db, tables);
      const changes = ids.length * settings.changes;
      growth(afterImport, afterChanges, changes, sent);
      // A post after the changes: the import's bytes per post, plus what the changed posts added, per changed post.
      const projected: Snapshot = {
        tables: afterChanges.tables.map((a) => {
          const b = find(afterImport, a.table);
          const per = (field: 'rows' | 'heap' | 'toast' | 'indexes' | 'total') => (b[field] / n + (a[field] - b[field]) / ids.length) * n;
          return { table: a.table, rows: per('rows'), heap: per('heap'), toast: per('toast'), indexes: per('indexes'), total: per('total') };
        }),
        indexes: afterChanges.indexes,
      };
      const nowJson = sim.world.snapshot().posts.reduce((sum, post) => sum + jsonBytes(post), 0) / n;
      report(
        ids.length === n
          ? `after ${settings.changes} changes per post`
          : `a post after ${settings.changes} changes (the import's bytes per post + the changed posts' growth per changed post)`,
        projected,
        n,
        nowJson,
      );
    }

    // ---- retention ----
    if (settings.retention) {
      for (const [table, column] of Object.entries(DATED_COLUMNS)) {
        await db.query(`UPDATE ${table} SET ${column} = ${column} - interval '${DATE_BACK}'`);
      }
      const response = await fetch(`${baseUrl}/admin/retention`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      if (!response.ok) throw new Error(`POST /admin/retention answered ${response.status}: ${await response.text()}`);
      const pruned = (await response.json()) as { deleted: Record<string, number> };
      console.log('');
      console.log(
        `  retention, every row dated back ${DATE_BACK}: deleted ${pruned.deleted.changes} feed entries, ${pruned.deleted.versions} versions, ` +
          `${pruned.deleted.events} events, ${pruned.deleted.reads} reconciles of timelines`,
      );
      // The service stopped first: nothing writes while the tables are rewritten.
      await stopProcess(service);
      for (const table of tables) await db.query(`VACUUM FULL "${table}"`);
      report('after retention, then VACUUM FULL (what is kept once the changes have aged out)', await snapshot(db, tables), n, importJson);
    }
  } finally {
    await db.end().catch(() => undefined);
    await stopProcess(service);
  }
}

/**
 * One round: each post's content edited in Pozy and its webhook sent, then until the mirror holds every one's new
 * version (its pozy_updated_at at least the round's first change).
 */
async function changeRound(sim: PozySimulator, db: Client, ids: readonly string[], round: number, sent: JsonSent, alive: () => void): Promise<void> {
  const world = sim.world;
  let roundStart: string | undefined;
  for (const [i, id] of ids.entries()) {
    const before = world.getPost(id)!;
    // The same length each round (the edit mark replaced), so a post's size stays what it was.
    const content = `${before.content.replace(/ \[edit \d+\]$/, '')} [edit ${round}]`;
    const post = world.editPost(id, { content });
    roundStart ??= post.updatedAt;
    const event = eventFor(post);
    sent.events += jsonBytes(event);
    // The service reads the post once for this event: that answer is JSON Pozy sends for the change too.
    sent.postReads += jsonBytes(post);
    sim.sendEvent(event);
    // Let the sender deliver while the round is made, rather than queue every event first.
    if (i % 500 === 499) await sleep(0);
  }
  let lastLeft = Infinity;
  let progressAt = Date.now();
  for (;;) {
    alive();
    const { rows } = await db.query<{ left: string }>('SELECT count(*) AS left FROM post WHERE id = ANY($1::text[]) AND pozy_updated_at < $2', [
      ids,
      roundStart,
    ]);
    const left = Number(rows[0].left);
    if (left === 0) break;
    if (left < lastLeft) {
      lastLeft = left;
      progressAt = Date.now();
    } else if (Date.now() - progressAt > 120_000) {
      throw new Error(`round ${round}: ${left} posts not mirrored after two minutes without progress`);
    }
    await sleep(500);
  }
  await sim.idle();
}

/** Until the service has nothing left to write: no job queued or running, and every feed entry placed. */
async function settled(db: Client): Promise<void> {
  for (const started = Date.now(); Date.now() - started < 120_000;) {
    const { rows } = await db.query<{ jobs: string; unplaced: string; due: string }>(
      `SELECT (SELECT count(*) FROM graphile_worker._private_jobs) AS jobs,
              (SELECT count(*) FROM change WHERE position IS NULL) AS unplaced,
              (SELECT count(*) FROM reconcile_request WHERE due_at IS NOT NULL) AS due`,
    );
    if (rows[0].jobs === '0' && rows[0].unplaced === '0' && rows[0].due === '0') return;
    await sleep(500);
  }
  throw new Error('the service did not settle within two minutes');
}

async function snapshot(db: Client, tables: string[]): Promise<Snapshot> {
  await vacuumTables(db, tables);
  const indexes = new Map<string, IndexStorage[]>();
  for (const { table } of POST_TABLES) indexes.set(table, await indexStorage(db, table));
  return { tables: await tableStorage(db, tables), indexes };
}

function find(snap: Snapshot, table: string): TableStorage {
  return snap.tables.find((t) => t.table === table)!;
}

/** The other tables with at least this much in them are shown one by one. */
const SHOWN_BYTES = 256 * 1024;

const num = (n: number, width = 9) => String(Math.round(n)).padStart(width);

/** Per post: each of a post's four tables, their sum, the larger other tables, the rest, and every table. */
function report(name: string, snap: Snapshot, posts: number, json: number): void {
  const own = POST_TABLES.map(({ table }) => find(snap, table));
  const others = snap.tables.filter((t) => !POST_TABLES.some((p) => p.table === t.table));
  const shown = others.filter((t) => t.total >= SHOWN_BYTES);
  const rest = sumStorage(
    others.filter((t) => t.total < SHOWN_BYTES),
    `${others.length - shown.length} other tables`,
  );
  console.log('');
  console.log(`  ${name}: bytes per post (${posts.toLocaleString('en')} posts; a post's JSON ${Math.round(json)} bytes)`);
  console.log(
    `  ${'table'.padEnd(30)}${'rows/post'.padStart(10)}${'heap'.padStart(9)}${'TOAST'.padStart(9)}${'indexes'.padStart(9)}${'total'.padStart(9)}` +
      `${'vs JSON'.padStart(9)}${'MB'.padStart(9)}`,
  );
  const line = (t: TableStorage) =>
    console.log(
      `  ${t.table.padEnd(30)}${(t.rows / posts).toFixed(2).padStart(10)}${num(t.heap / posts)}${num(t.toast / posts)}${num(t.indexes / posts)}` +
        `${num(t.total / posts)}${`${(t.total / posts / json).toFixed(2)}x`.padStart(9)}${(t.total / 1024 / 1024).toFixed(1).padStart(9)}`,
    );
  own.forEach(line);
  line(sumStorage(own, "a post's four tables"));
  shown.forEach(line);
  line(rest);
  line(sumStorage(snap.tables, 'every table'));
  console.log(`  (goal after the import: a post's four tables at most 4x its JSON)`);
  for (const { table } of POST_TABLES) {
    const indexes = snap.indexes.get(table) ?? [];
    if (indexes.length === 0 || find(snap, table).rows === 0) continue;
    console.log(`  ${table}'s indexes, bytes per post: ${indexes.map((i) => `${i.index} ${Math.round(i.bytes / posts)}`).join(', ')}`);
  }
}

/** Per change: each table's growth, against the JSON Pozy sent for the change, with what bounds it. */
function growth(before: Snapshot, after: Snapshot, changes: number, sent: JsonSent): void {
  const perChangeJson = (sent.postReads + sent.events) / changes;
  console.log('');
  console.log(
    `  growth per change (${changes.toLocaleString('en')} changes; Pozy sent ${Math.round(perChangeJson)} bytes of JSON per change: ` +
      `the post read ${Math.round(sent.postReads / changes)}, the webhook ${Math.round(sent.events / changes)})`,
  );
  console.log(
    `  ${'table'.padEnd(30)}${'rows'.padStart(10)}${'heap'.padStart(9)}${'TOAST'.padStart(9)}${'indexes'.padStart(9)}${'total'.padStart(9)}${'vs JSON'.padStart(9)}   bounded by`,
  );
  const line = (name: string, b: TableStorage, a: TableStorage, bound: string) =>
    console.log(
      `  ${name.padEnd(30)}${((a.rows - b.rows) / changes).toFixed(2).padStart(10)}${num((a.heap - b.heap) / changes)}` +
        `${num((a.toast - b.toast) / changes)}${num((a.indexes - b.indexes) / changes)}${num((a.total - b.total) / changes)}` +
        `${`${((a.total - b.total) / changes / perChangeJson).toFixed(2)}x`.padStart(9)}   ${bound}`,
    );
  for (const { table, bound } of POST_TABLES) line(table, find(before, table), find(after, table), bound);
  const grew = after.tables.filter((a) => !POST_TABLES.some((p) => p.table === a.table) && a.total - find(before, a.table).total >= SHOWN_BYTES);
  for (const a of grew) line(a.table, find(before, a.table), a, BOUNDS[a.table] ?? '');
  line('every table', sumStorage(before.tables), sumStorage(after.tables), '');
}

/** What bounds the other tables a change leaves rows in. */
const BOUNDS: Record<string, string> = {
  reconcile_read: 'EVENT_RETENTION_DAYS (30)',
  reconcile_request: 'one row a post, updated in place',
};
