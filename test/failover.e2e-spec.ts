import { PozySimulator } from '../simulator/simulator';
import { WebhookLoad } from './support/webhook-load';
import { describeOutcome, FailoverService, settle, startFailoverService, startLoad } from './support/failover-scenario';
import { PgCluster, startPgCluster } from './support/pg-cluster';
import { waitFor } from './support/service';
import { postgresBinDir } from './support/streaming-replica';
import { TcpProxy } from './support/tcp-proxy';

const BIN = postgresBinDir();
const DATABASE = 'pozy';

/**
 * As an operator meets a failover behind one endpoint (a cloud DNS name): three PostgreSQL 15 servers, node1 the
 * primary's synchronous standby; the primary killed under webhook load; for several seconds the endpoint still sends
 * new connections to node2, a read-only standby; then node1 is promoted and the endpoint points at it.
 */
describe('failover: the primary killed under load, the endpoint on a read-only standby for a while, a standby promoted', () => {
  let cluster: PgCluster;
  let proxy: TcpProxy;
  let sim: PozySimulator;
  let service: FailoverService | undefined;
  let load: WebhookLoad | undefined;

  beforeAll(async () => {
    if (!BIN) throw new Error('No PostgreSQL server tools (initdb, pg_ctl, pg_basebackup): apt-get install postgresql');
    cluster = await startPgCluster(BIN, { standbys: 2, synchronousStandbys: 1 });
    await cluster.query(cluster.node('node0'), `CREATE DATABASE ${DATABASE}`);
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: cluster.node('node0').port });
    sim = await PozySimulator.start({ apiKey: 'sk_sim_failover', seed: 36, rateLimitPerMinute: 100_000 });
  }, 120_000);

  afterAll(async () => {
    load?.halt();
    await service?.stop();
    await sim?.stop();
    await proxy?.stop();
    await cluster?.destroy();
  }, 60_000);

  it('loses no accepted event, never exits, says why it is not ready, and writes again within seconds of a writable primary', async () => {
    const [node0, node1, node2] = cluster.nodes;
    service = await startFailoverService(sim, `postgresql://postgres@127.0.0.1:${proxy.port}/${DATABASE}`);
    load = await startLoad(sim, () => service!.baseUrl, { perSecond: 60, seed: 36 });

    await cluster.kill(node0);
    proxy.point({ host: '127.0.0.1', port: node2.port });
    const staleFrom = Date.now();
    // Not ready while only a read-only node answers, and saying so.
    const notReady = await waitFor(
      'readiness to say the database is read-only',
      async () => {
        service!.alive();
        const readiness = await service!.readiness();
        return readiness.status === 503 && readiness.reason === 'database_read_only' ? readiness : undefined;
      },
      30_000,
      100,
    );
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 6_000 - (Date.now() - staleFrom))));
    await cluster.promote(node1);
    await cluster.follow(node2, node1);
    proxy.point({ host: '127.0.0.1', port: node1.port });
    const writableAt = Date.now();

    const outcome = await settle({ sim, load, services: [service], primaryUrl: node1.url(DATABASE), writableAt });
    const [left] = await cluster.query<{ n: number }>(
      node2,
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pozy-sync%'",
    );
    process.stdout.write(describeOutcome('failover behind a stale endpoint', outcome, `; ${left.n} connections on the read-only node`));

    expect(notReady).toEqual({ status: 503, reason: 'database_read_only' });
    expect(outcome.lost).toBe(0);
    expect(left.n).toBe(0);
    expect(await service.metric('pozy_sync_database_primary_changes_total', { kind: 'failover' })).toBeGreaterThanOrEqual(1);
    expect(await service.metric('pozy_sync_database_connections_discarded_total', { cause: 'wrong_server' })).toBeGreaterThan(0);
    expect(await service.metric('pozy_sync_database_writable')).toBe(1);
    expect(await service.metric('pozy_sync_unhandled_rejections_total', { source: 'pozy-sync' })).toBe(0);
  }, 300_000);
});
