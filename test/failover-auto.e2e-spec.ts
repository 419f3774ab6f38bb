import { PozySimulator } from '../simulator/simulator';
import { AutoFailoverFormation, autoFailoverBinDir, startAutoFailoverFormation } from './support/auto-failover';
import { WebhookLoad } from './support/webhook-load';
import { describeOutcome, FailoverService, settle, startFailoverService, startLoad } from './support/failover-scenario';

const DATABASE = 'pozy';

/**
 * pg_auto_failover as its users run it: a monitor and two nodes, the service given the formation's multi-host URL
 * (`pg_autoctl show uri`, target_session_attrs=read-write), and `pg_autoctl perform failover` under load.
 */
describe('failover: pg_auto_failover, the service on its multi-host URL', () => {
  let formation: AutoFailoverFormation;
  let sim: PozySimulator;
  let service: FailoverService | undefined;
  let load: WebhookLoad | undefined;

  beforeAll(async () => {
    if (!autoFailoverBinDir()) throw new Error('No pg_autoctl with its monitor extension: apt-get install postgresql-15-auto-failover');
    formation = await startAutoFailoverFormation();
    await formation.createDatabase(DATABASE);
    sim = await PozySimulator.start({ apiKey: 'sk_sim_autofailover', seed: 362, rateLimitPerMinute: 100_000 });
  }, 180_000);

  afterAll(async () => {
    load?.halt();
    await service?.stop();
    await sim?.stop();
    await formation?.stop();
  }, 120_000);

  it('follows `pg_autoctl perform failover` to the new primary on its own, with nothing lost', async () => {
    const before = await formation.primary();
    service = await startFailoverService(sim, formation.uri(DATABASE, 'postgres'));
    load = await startLoad(sim, () => service!.baseUrl, { perSecond: 60, seed: 362 });

    const after = await formation.failover();
    const writableAt = Date.now();
    expect(after.name).not.toBe(before.name);

    const outcome = await settle({ sim, load, services: [service], primaryUrl: after.url(DATABASE), writableAt });
    const standby = formation.nodes().find((node) => node.name === before.name)!;
    const { Client } = await import('pg');
    const client = new Client({ connectionString: standby.url(DATABASE) });
    await client.connect();
    const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pozy-sync%'");
    await client.end();
    process.stdout.write(describeOutcome('pg_auto_failover perform failover', outcome, `; ${rows[0].n} connections on the demoted node`));

    expect(outcome.lost).toBe(0);
    expect(rows[0].n).toBe(0);
    expect(await service.metric('pozy_sync_database_primary_changes_total', { kind: 'failover' })).toBeGreaterThanOrEqual(1);
    expect(await service.metric('pozy_sync_unhandled_rejections_total', { source: 'pozy-sync' })).toBe(0);
  }, 300_000);
});
