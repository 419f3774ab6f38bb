import { Client } from 'pg';
import { PozySimulator } from '../simulator/simulator';
import { WebhookLoad } from './support/webhook-load';
import { describeOutcome, FailoverService, settle, startFailoverService, startLoad } from './support/failover-scenario';
import { PgCluster, startPgCluster } from './support/pg-cluster';
import { postgresBinDir } from './support/streaming-replica';

const BIN = postgresBinDir();
const DATABASE = 'pozy';

/** The same server, its connections cut: every backend of the service terminated, then `pg_ctl restart -m fast`. */
describe('failover: terminated connections and a restart of the primary, under load', () => {
  let cluster: PgCluster;
  let sim: PozySimulator;
  let service: FailoverService | undefined;
  let load: WebhookLoad | undefined;

  beforeAll(async () => {
    if (!BIN) throw new Error('No PostgreSQL server tools (initdb, pg_ctl, pg_basebackup): apt-get install postgresql');
    cluster = await startPgCluster(BIN, { standbys: 0 });
    await cluster.query(cluster.node('node0'), `CREATE DATABASE ${DATABASE}`);
    sim = await PozySimulator.start({ apiKey: 'sk_sim_restart', seed: 363, rateLimitPerMinute: 100_000 });
  }, 120_000);

  afterAll(async () => {
    load?.halt();
    await service?.stop();
    await sim?.stop();
    await cluster?.destroy();
  }, 60_000);

  it('reconnects after pg_terminate_backend of all its connections and after a fast restart, with nothing lost', async () => {
    const [node0] = cluster.nodes;
    service = await startFailoverService(sim, node0.url(DATABASE));
    load = await startLoad(sim, () => service!.baseUrl, { perSecond: 60, seed: 363 });

    const admin = new Client({ connectionString: node0.url('postgres') });
    await admin.connect();
    const { rows } = await admin.query<{ n: number }>(
      "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pozy-sync%'",
    );
    await admin.end();
    const terminatedAt = Date.now();
    const afterTerminate = load.accepted;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    service.alive();
    expect(load.accepted).toBeGreaterThan(afterTerminate);
    expect(load.firstStoredAfter(terminatedAt)).toBeDefined();

    await cluster.restart(node0);
    const writableAt = Date.now();
    const outcome = await settle({ sim, load, services: [service], primaryUrl: node0.url(DATABASE), writableAt });
    process.stdout.write(describeOutcome('terminate every connection, then restart -m fast', outcome, `; ${rows[0].n} connections terminated`));

    expect(rows[0].n).toBeGreaterThan(0);
    expect(outcome.lost).toBe(0);
    expect(await service.metric('pozy_sync_database_primary_changes_total', { kind: 'restart' })).toBeGreaterThanOrEqual(1);
    expect(await service.metric('pozy_sync_unhandled_rejections_total', { source: 'pozy-sync' })).toBe(0);
  }, 300_000);
});
