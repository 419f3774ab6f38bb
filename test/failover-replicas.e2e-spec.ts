import { Pool } from 'pg';
import { PozySimulator } from '../simulator/simulator';
import { describeOutcome, FailoverService, settle, startFailoverService, startLoad } from './support/failover-scenario';
import { PgCluster, startPgCluster } from './support/pg-cluster';
import { waitFor } from './support/service';
import { postgresBinDir } from './support/streaming-replica';
import { TestSubscriber } from './support/subscriber';
import { TcpProxy } from './support/tcp-proxy';
import { WebhookLoad } from './support/webhook-load';

const BIN = postgresBinDir();
const DATABASE = 'pozy';
const ADMIN_TOKEN = 'admin_failover_replicas_token';

interface FeedEntry {
  cursor: string;
  workspaceId: string;
  type: string;
  id: string;
  sequence: number;
}

/**
 * A feed consumer as a team writes one: `GET /changes` after its last cursor, long-polling, and trying again a
 * moment later when the service answers an error or none (as it may while no primary takes writes).
 */
class FeedFollower {
  readonly entries: FeedEntry[] = [];
  failedReads = 0;
  private cursor: string | undefined;
  private stopped = false;
  private readonly done: Promise<void>;

  constructor(private readonly baseUrl: string) {
    this.done = this.follow();
  }

  private async follow(): Promise<void> {
    while (!this.stopped) {
      const query = new URLSearchParams({ limit: '1000', wait: '1', consistency: 'strong' });
      if (this.cursor !== undefined) query.set('after', this.cursor);
      try {
        const response = await fetch(`${this.baseUrl}/changes?${query.toString()}`, { signal: AbortSignal.timeout(10_000) });
        if (response.status !== 200) throw new Error(`GET /changes answered ${response.status}`);
        const page = (await response.json()) as { data: FeedEntry[]; nextCursor: string | null };
        this.entries.push(...page.data);
        if (page.nextCursor !== null) this.cursor = page.nextCursor;
      } catch {
        this.failedReads += 1;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

/**
 * The deployment a team scales out: one `ROLE=api` replica taking webhooks and reads, one `ROLE=worker` running the
 * jobs, the feed's sequencer and the schedules, both through one endpoint. The same failover as failover.e2e-spec.ts
 * (the primary killed under load, the endpoint on a read-only standby for seconds, the synchronous standby promoted):
 * both replicas follow the new primary, the feed's sequencer goes on there, a consumer following the feed throughout
 * misses no change, and the team's ops endpoint is told of the failover once.
 */
describe('failover with two replicas (ROLE=api and ROLE=worker) and a feed consumer following along', () => {
  let cluster: PgCluster;
  let proxy: TcpProxy;
  let sim: PozySimulator;
  let ops: TestSubscriber;
  let api: FailoverService | undefined;
  let worker: FailoverService | undefined;
  let load: WebhookLoad | undefined;
  let follower: FeedFollower | undefined;

  beforeAll(async () => {
    if (!BIN) throw new Error('No PostgreSQL server tools (initdb, pg_ctl, pg_basebackup): apt-get install postgresql');
    cluster = await startPgCluster(BIN, { standbys: 2, synchronousStandbys: 1 });
    await cluster.query(cluster.node('node0'), `CREATE DATABASE ${DATABASE}`);
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: cluster.node('node0').port });
    sim = await PozySimulator.start({ apiKey: 'sk_sim_failover_replicas', seed: 3636, rateLimitPerMinute: 100_000 });
    ops = await TestSubscriber.start('/ops');
  }, 120_000);

  afterAll(async () => {
    load?.halt();
    await follower?.stop();
    await api?.stop();
    await worker?.stop();
    await ops?.close();
    await sim?.stop();
    await proxy?.stop();
    await cluster?.destroy();
  }, 60_000);

  it('moves both replicas to the new primary, keeps the feed whole for its consumer, and tells the ops endpoint once', async () => {
    const [node0, node1, node2] = cluster.nodes;
    const endpoint = `postgresql://postgres@127.0.0.1:${proxy.port}/${DATABASE}`;
    worker = await startFailoverService(sim, endpoint, { ROLE: 'worker', ADMIN_TOKEN, NOTIFY_ALLOWED_HOSTS: '127.0.0.1' });
    api = await startFailoverService(sim, endpoint, { ROLE: 'api', ADMIN_TOKEN, NOTIFY_ALLOWED_HOSTS: '127.0.0.1' });
    const subscribed = await fetch(`${api.baseUrl}/admin/subscriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: ops.url, eventTypes: ['ops.database.failover'] }),
    });
    expect(subscribed.status).toBe(201);
    follower = new FeedFollower(api.baseUrl);
    load = await startLoad(sim, () => api!.baseUrl, { perSecond: 60, seed: 3636 });

    await cluster.kill(node0);
    proxy.point({ host: '127.0.0.1', port: node2.port });
    const staleFrom = Date.now();
    await waitFor(
      'both replicas to say the database is read-only',
      async () => {
        const answers = await Promise.all([api!, worker!].map((s) => (s.alive(), s.readiness())));
        return answers.every((a) => a.status === 503 && a.reason === 'database_read_only') ? true : undefined;
      },
      30_000,
      100,
    );
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 6_000 - (Date.now() - staleFrom))));
    await cluster.promote(node1);
    await cluster.follow(node2, node1);
    proxy.point({ host: '127.0.0.1', port: node1.port });
    const writableAt = Date.now();

    const outcome = await settle({ sim, load, services: [api, worker], primaryUrl: node1.url(DATABASE), writableAt });

    const primary = new Pool({ connectionString: node1.url(DATABASE), max: 1 });
    try {
      // The sequencer (the worker's) placed every change on the new primary, and the consumer read up to the last.
      const feed = await waitFor(
        'the feed sequenced whole and read to its head',
        async () => {
          api!.alive();
          worker!.alive();
          const { rows } = await primary.query<{ sequenced: number; unsequenced: number }>(
            'SELECT count(position)::int AS sequenced, (count(*) - count(position))::int AS unsequenced FROM change',
          );
          const [{ sequenced, unsequenced }] = rows;
          return unsequenced === 0 && new Set(follower!.entries.map((e) => e.cursor)).size === sequenced ? { sequenced } : undefined;
        },
        90_000,
        250,
      );
      // Every post's and account's newest change reached the consumer: its last sequence is the mirror's.
      const { rows: mirrored } = await primary.query<{ kind: string; workspace_id: string; id: string; sequence: number }>(
        "SELECT 'post' AS kind, workspace_id, id, sequence FROM post WHERE sequence > 0 UNION ALL SELECT 'account', workspace_id, id, sequence FROM account WHERE sequence > 0",
      );
      const lastSeen = new Map<string, number>();
      for (const e of follower.entries) {
        const key = `${e.type.split('.')[0]}:${e.workspaceId}:${e.id}`;
        lastSeen.set(key, Math.max(lastSeen.get(key) ?? 0, e.sequence));
      }
      const behind = mirrored.filter((r) => lastSeen.get(`${r.kind}:${r.workspace_id}:${r.id}`) !== r.sequence);
      const [left] = await cluster.query<{ n: number }>(
        node2,
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pozy-sync%'",
      );
      process.stdout.write(
        describeOutcome(
          'failover with ROLE=api and ROLE=worker',
          outcome,
          `; feed: ${feed.sequenced} changes read by the consumer (${follower.failedReads} reads failed and were retried); ${left.n} connections on the read-only node`,
        ),
      );

      const told = await waitFor(
        'the failover told to the ops endpoint',
        async () => (ops.received.some((r) => r.json.type === 'ops.database.failover') ? ops.received : undefined),
        60_000,
        100,
      );
      const { rows: recorded } = await primary.query<{ n: number }>("SELECT count(*)::int AS n FROM ops_event WHERE type = 'ops.database.failover'");

      expect(outcome.lost).toBe(0);
      expect(mirrored.length).toBeGreaterThan(0);
      expect(behind).toEqual([]);
      expect(left.n).toBe(0);
      // Both replicas saw it; it is one occurrence, told once.
      expect(recorded[0].n).toBe(1);
      expect(told.filter((r) => r.json.type === 'ops.database.failover')).toHaveLength(1);
      expect(told[0].json.data).toMatchObject({ kind: 'failover', to: expect.stringContaining(String(node1.port)) });
      for (const replica of [api, worker]) {
        expect(await replica.metric('pozy_sync_database_primary_changes_total', { kind: 'failover' })).toBeGreaterThanOrEqual(1);
        expect(await replica.metric('pozy_sync_database_writable')).toBe(1);
        expect(await replica.metric('pozy_sync_unhandled_rejections_total', { source: 'pozy-sync' })).toBe(0);
      }
      const status = (await (await fetch(`${api.baseUrl}/sync/status`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as {
        database: { state: string; changes: { failover: number }; withoutPrimarySeconds: number; connectionsDiscarded: Record<string, number> };
      };
      expect(status.database.state).toBe('writable');
      expect(status.database.changes.failover).toBeGreaterThanOrEqual(1);
      expect(status.database.withoutPrimarySeconds).toBeGreaterThan(0);
      expect(status.database.connectionsDiscarded.wrong_server).toBeGreaterThan(0);
    } finally {
      await primary.end();
    }
  }, 360_000);
});
