import type { PozyEvent } from '../simulator/world/pozy-shapes';
import { Rng } from '../simulator/faults';
import { mirrorDifferences } from '../simulator/mirror-check';
import { HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { waitFor } from './support/service';
import { SimulatorSpec, startSpec } from './support/spec';

const STEPS = 1_500;

describe('chaos: duplicates, reordering, drops and API faults together', () => {
  let harness: SimulatorSpec;

  beforeAll(async () => {
    harness = await startSpec('chaos', {
      simulator: {
        seed: 99,
        faults: {
          duplicateRate: 0.1,
          reorderMaxDelayMs: 200,
          dropRate: 0.05,
          api5xxRate: 0.05,
          api429Rate: 0.02,
          apiSlowRate: 0.05,
          apiSlowMs: 150,
        },
      },
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('loses nothing, applies nothing twice, and ends with the mirror equal to the truth after one backfill', async () => {
    const world = harness.sim.world;
    const emitted: PozyEvent[] = [];
    world.onEvent((e) => emitted.push(e));
    world.seedWorld({ profiles: 3, accountsPerProfile: 4, posts: 30 });
    const rng = new Rng(99);
    for (let i = 0; i < STEPS; i += 1) {
      world.randomStep(rng, { silent: false });
      if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await settled(harness, 120_000);
    const webhooks = harness.sim.stats().webhooks;
    expect(webhooks.drops).toBeGreaterThan(0);
    expect(webhooks.duplicates).toBeGreaterThan(0);

    const response = await fetch(`${harness.service.baseUrl}/admin/backfill`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` },
    });
    const { runId } = (await response.json()) as { runId: string };
    const run = await waitFor(
      'the backfill to finish',
      async () => {
        const r = (await (
          await fetch(`${harness.service.baseUrl}/admin/backfill/${runId}`, { headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` } })
        ).json()) as { status: string; eventsRecovered: number };
        return r.status === 'running' ? undefined : r;
      },
      60_000,
    );
    await settled(harness, 120_000);

    const { rows } = await harness.service.pool.query<{ id: string }>('SELECT id FROM pozy_event');
    const stored = new Set(rows.map((r) => r.id));
    const lost = emitted.filter((e) => !stored.has(e.id));
    const { rows: recovered } = await harness.service.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pozy_event WHERE recovered_by = $1', [
      runId,
    ]);
    // The figures, for the record of this run.
    process.stdout.write(
      `chaos: ${emitted.length} events, ${webhooks.attempts} deliveries (${webhooks.duplicates} duplicated, ` +
        `${webhooks.drops} dropped), ${rows.length} stored, ${run.eventsRecovered} recovered by the backfill, ` +
        `${lost.length} lost; API calls ${harness.sim.stats().api.requests}\n`,
    );

    expect(run).toMatchObject({ status: 'succeeded' });
    expect(lost).toEqual([]);
    // Each event once (the primary key), and no event we did not emit.
    expect(rows.length).toBe(emitted.length);
    expect(recovered[0].n).toBe(run.eventsRecovered);
    expect(run.eventsRecovered).toBeGreaterThan(0);
    expect(await mirrorDifferences(harness.service.pool, world, harness.seen)).toEqual([]);
  }, 300_000);
});
