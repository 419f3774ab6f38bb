import fc from 'fast-check';
import { Rng } from '../simulator/faults';
import type { PozyEvent } from '../simulator/world/pozy-shapes';
import { Harness, settled } from './support/harness';
import { mirrorDifferences } from '../simulator/mirror-check';
import { deliver } from './support/pozy-events';
import { SimulatorSpec, startSpec } from './support/spec';

/** Deliveries in flight at once: enough for deliveries of one resource to race each other. */
const CONCURRENCY = 8;

async function deliverAll(harness: Harness, events: PozyEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += CONCURRENCY) {
    const answers = await Promise.all(events.slice(i, i + CONCURRENCY).map((e) => deliver(harness.service.baseUrl, e as never)));
    for (const answer of answers) if (answer.status !== 200) throw new Error(`delivery answered ${answer.status}`);
  }
}

/** The events in a random order, some of them twice. */
function permuteAndDuplicate(events: PozyEvent[], rng: Rng, duplicateRate: number): PozyEvent[] {
  const copies = [...events, ...events.filter(() => rng.chance(duplicateRate))];
  for (let i = copies.length - 1; i > 0; i -= 1) {
    const j = rng.int(i + 1);
    [copies[i], copies[j]] = [copies[j], copies[i]];
  }
  return copies;
}

describe('property: any order and duplication of the event stream ends with the mirror equal to Pozy', () => {
  let harness: SimulatorSpec;

  beforeAll(async () => {
    // The test delivers the events itself, in the orders fast-check picks.
    harness = await startSpec('mirror_property', { env: { RECONCILE_COALESCE_WINDOW_MS: '50' }, simulator: { deliver: false } });
    const seeded: PozyEvent[] = [];
    const stop = harness.sim.world.onEvent((e) => seeded.push(e));
    harness.sim.world.seedWorld({ profiles: 2, accountsPerProfile: 3, posts: 0 });
    stop();
    await deliverAll(harness, seeded);
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('holds for generated streams', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          stepSeed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
          orderSeed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
          phases: fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1, maxLength: 3 }),
          duplicateRate: fc.double({ min: 0, max: 0.6, noNaN: true }),
          deliverEarly: fc.double({ min: 0, max: 1, noNaN: true }),
        }),
        async ({ stepSeed, orderSeed, phases, duplicateRate, deliverEarly }) => {
          const world = harness.sim.world;
          const steps = new Rng(stepSeed);
          const order = new Rng(orderSeed);
          let undelivered: PozyEvent[] = [];
          for (const stepsInPhase of phases) {
            const emitted: PozyEvent[] = [];
            const stop = world.onEvent((e) => emitted.push(e));
            for (let i = 0; i < stepsInPhase; i += 1) world.randomStep(steps, { silent: false });
            stop();
            // Some events now, in any order and some twice, while the world goes on changing; the rest later.
            const now = [...undelivered, ...emitted].filter(() => order.chance(deliverEarly));
            undelivered = [...undelivered, ...emitted].filter((e) => !now.includes(e));
            await deliverAll(harness, permuteAndDuplicate(now, order, duplicateRate));
          }
          await deliverAll(harness, permuteAndDuplicate(undelivered, order, duplicateRate));
          await settled(harness);

          expect(await mirrorDifferences(harness.service.pool, world, harness.seen)).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  }, 300_000);
});
