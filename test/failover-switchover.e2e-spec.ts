import { PozySimulator } from '../simulator/simulator';
import { WebhookLoad } from './support/webhook-load';
import { describeOutcome, FailoverService, settle, startFailoverService, startLoad } from './support/failover-scenario';
import { PgCluster, startPgCluster } from './support/pg-cluster';
import { postgresBinDir } from './support/streaming-replica';
import { TcpProxy } from './support/tcp-proxy';

const BIN = postgresBinDir();
const DATABASE = 'pozy';

/**
 * A planned switchover and back, as a maintenance window does it: the primary shut down cleanly (its synchronous
 * standby has every commit), the standby promoted, the endpoint moved, the old primary rejoining as a standby of the
 * new one; then the same the other way.
 */
describe('failover: a planned switchover and back, under load', () => {
  let cluster: PgCluster;
  let proxy: TcpProxy;
  let sim: PozySimulator;
  let service: FailoverService | undefined;
  let load: WebhookLoad | undefined;

  beforeAll(async () => {
    if (!BIN) throw new Error('No PostgreSQL server tools (initdb, pg_ctl, pg_basebackup): apt-get install postgresql');
    cluster = await startPgCluster(BIN, { standbys: 1, synchronousStandbys: 1 });
    await cluster.query(cluster.node('node0'), `CREATE DATABASE ${DATABASE}`);
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: cluster.node('node0').port });
    sim = await PozySimulator.start({ apiKey: 'sk_sim_switchover', seed: 361, rateLimitPerMinute: 100_000 });
  }, 120_000);

  afterAll(async () => {
    load?.halt();
    await service?.stop();
    await sim?.stop();
    await proxy?.stop();
    await cluster?.destroy();
  }, 60_000);

  it('goes to the promoted standby and back with nothing lost, and leaves no connection on the demoted node', async () => {
    const [node0, node1] = cluster.nodes;
    service = await startFailoverService(sim, `postgresql://postgres@127.0.0.1:${proxy.port}/${DATABASE}`);
    load = await startLoad(sim, () => service!.baseUrl, { perSecond: 60, seed: 361 });

    const switchOver = async (from: typeof node0, to: typeof node0) => {
      await cluster.stop(from);
      await cluster.promote(to);
      proxy.point({ host: '127.0.0.1', port: to.port });
      const at = Date.now();
      await cluster.rejoinAsStandby(from, to);
      await cluster.synchronous(to, [from]);
      return at;
    };
    await switchOver(node0, node1);
    // Some load on node1 before going back.
    const onNode1 = load.accepted;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(load.accepted).toBeGreaterThan(onNode1);
    const backAt = await switchOver(node1, node0);

    const outcome = await settle({ sim, load, services: [service], primaryUrl: node0.url(DATABASE), writableAt: backAt });
    const [left] = await cluster.query<{ n: number }>(
      node1,
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pozy-sync%'",
    );
    process.stdout.write(describeOutcome('switchover and back', outcome, `; ${left.n} connections on the demoted node`));

    expect(outcome.lost).toBe(0);
    expect(left.n).toBe(0);
    expect(await service.metric('pozy_sync_database_primary_changes_total', { kind: 'failover' })).toBeGreaterThanOrEqual(2);
    expect(await service.metric('pozy_sync_unhandled_rejections_total', { source: 'pozy-sync' })).toBe(0);
  }, 300_000);
});
