import { Rng } from '../simulator/faults';
import { ChangeFilter, ChangeRepository } from '../src/changes/change.repository';
import { ChangeWindow, joinWindows, readFromWindow, toPage, windowOf } from '../src/changes/change-window';
import { TAIL_BATCH } from '../src/changes/change-tail';
import { CHANGE_TYPES } from '../src/changes/record-changes';
import { DatabaseService, Db } from '../src/database/database.service';
import { RunningService } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';

const ENTRIES = 12_500;
/** Pruned by retention: cursors before them are expired. */
const PRUNED = 300;
const PROFILES = ['p-brand', 'p-other', 'p-third'];
const PLATFORMS = ['instagram', 'linkedin', 'tiktok'];

/**
 * Entries of every type, each with 0 to 2 profiles and platforms, and one profile (`p-rare`) only at two positions
 * more than 10,000 apart, so that a filtered read's scan window (10,000 positions) matters.
 */
const LOAD = `
  INSERT INTO change (workspace_id, position, type, resource_id, sequence, changed_at, profile_ids, platforms, data)
  SELECT 'default', i, (ARRAY['post.changed','post.deleted','account.changed','account.removed'])[1 + (i / 7) % 4],
         'r' || (i % 997), i, now(),
         CASE WHEN i IN (${PRUNED + 50}, ${PRUNED + 50 + 10_500}) THEN ARRAY['p-rare']
              WHEN i % 5 = 0 THEN ARRAY[]::text[] WHEN i % 5 = 1 THEN ARRAY['p-brand'] WHEN i % 5 = 2 THEN ARRAY['p-other']
              WHEN i % 5 = 3 THEN ARRAY['p-brand', 'p-third'] ELSE ARRAY['p-third', 'p-other'] END,
         CASE (i / 3) % 4 WHEN 0 THEN ARRAY[]::text[] WHEN 1 THEN ARRAY['instagram'] WHEN 2 THEN ARRAY['linkedin', 'tiktok']
              ELSE ARRAY['tiktok'] END,
         jsonb_build_object('n', i)
    FROM generate_series(1, ${ENTRIES}) AS i`;

/** The filters a reader may give, as ChangesService builds them from the query. */
function randomFilter(rng: Rng): { filter: ChangeFilter; filtered: boolean } {
  const filter: ChangeFilter = {};
  if (rng.chance(0.4)) filter.types = CHANGE_TYPES.filter(() => rng.chance(0.5));
  if (filter.types?.length === 0) filter.types = [rng.pick(CHANGE_TYPES)];
  if (rng.chance(0.4)) filter.profileId = rng.chance(0.15) ? 'p-rare' : rng.chance(0.1) ? 'p-nobody' : rng.pick(PROFILES);
  if (rng.chance(0.3)) filter.platform = rng.pick(PLATFORMS);
  // A named consumer's lists (any of them) and its partition.
  if (rng.chance(0.2)) filter.profileIds = rng.chance(0.5) ? ['p-rare', rng.pick(PROFILES)] : [rng.pick(PROFILES)];
  if (rng.chance(0.2)) filter.platforms = [rng.pick(PLATFORMS), rng.pick(PLATFORMS)];
  if (rng.chance(0.3)) {
    const of = rng.pick([2, 3, 7]);
    filter.partition = { index: rng.int(of), of };
  }
  const filtered =
    filter.types !== undefined ||
    filter.profileId !== undefined ||
    filter.platform !== undefined ||
    filter.profileIds !== undefined ||
    filter.platforms !== undefined;
  return { filter, filtered };
}

/** The positions a read looks ahead, as ChangesService.follow decides. */
function scanOf(filter: ChangeFilter, filtered: boolean, limit: number): number {
  if (filter.partition) return Math.min(10_000, limit * filter.partition.of * (filtered ? 4 : 1));
  return filtered ? 10_000 : limit;
}

describe("the tail's answers from memory equal what the SQL filter answers (change-window.ts)", () => {
  let spec: ServiceSpec;
  let service: RunningService;
  let changes: ChangeRepository;
  let kysely: Db;

  beforeAll(async () => {
    spec = await startSpec('change_window', { env: { ROLE: 'api' } });
    service = spec.service;
    await service.pool.query(LOAD);
    await service.pool.query(`DELETE FROM change WHERE position <= ${PRUNED}`);
    changes = service.app.get(ChangeRepository);
    kysely = service.app.get(DatabaseService).db;
  });

  afterAll(async () => {
    await spec?.close();
  });

  /** The tail's reads from `from` on, joined, as it keeps them (at most `keep` entries). */
  async function tailWindow(from: number, reads: number, keep: number): Promise<ChangeWindow> {
    let window: ChangeWindow | undefined;
    let at = BigInt(from);
    for (let i = 0; i < reads; i += 1) {
      const next = windowOf(at, await changes.page(kysely, at.toString(), TAIL_BATCH, TAIL_BATCH, {}), TAIL_BATCH);
      window = window ? joinWindows(window, next, keep) : next;
      at = next.to;
    }
    return window!;
  }

  it('every page, from a window holding the whole feed: the same entries and the same nextCursor, filters and the 10,000 positions of a scan included', async () => {
    const whole = await tailWindow(PRUNED - 1, Math.ceil(ENTRIES / TAIL_BATCH), ENTRIES);
    expect(whole.to).toBe(BigInt(ENTRIES));
    const rng = new Rng(20_261_201);
    let scansCut = 0;
    for (let i = 0; i < 300; i += 1) {
      const after = String(PRUNED - 1 + rng.int(ENTRIES - PRUNED + 60));
      const limit = rng.pick([1, 3, 20, 100, 1000]);
      const { filter, filtered } = randomFilter(rng);
      const scan = scanOf(filter, filtered, limit);
      const sql = toPage(await changes.page(kysely, after, limit, scan, filter), after, limit, scan);
      const fromWindow = readFromWindow(whole, after, limit, scan, filter);
      expect({ after, limit, filter, page: fromWindow && toPage(fromWindow, after, limit, scan) }).toEqual({ after, limit, filter, page: sql });
      if (scan === 10_000 && sql.data.length < limit && BigInt(sql.nextCursor) === BigInt(after) + 10_000n) scansCut += 1;
    }
    // The cases where a filtered read stopped at its 10,000 positions were met, not only assumed.
    const rare = toPage(await changes.page(kysely, String(PRUNED), 100, 10_000, { profileId: 'p-rare' }), String(PRUNED), 100, 10_000);
    expect(rare).toEqual({ data: [expect.objectContaining({ cursor: String(PRUNED + 50) })], nextCursor: String(PRUNED + 10_000) });
    expect(toPage(readFromWindow(whole, String(PRUNED), 100, 10_000, { profileId: 'p-rare' })!, String(PRUNED), 100, 10_000)).toEqual(rare);
    expect(scansCut).toBeGreaterThan(0);
  });

  it('from one read of the tail, or a few joined and cut to what it keeps: the same answer, or none when the answer lies outside it', async () => {
    const rng = new Rng(7);
    let answered = 0;
    let outside = 0;
    for (let i = 0; i < 60; i += 1) {
      const from = PRUNED - 1 + rng.int(ENTRIES - PRUNED);
      const window = await tailWindow(from, 1 + rng.int(3), 1000 + rng.int(1500));
      for (let j = 0; j < 16; j += 1) {
        const limit = rng.pick([1, 20, 100, 1000]);
        const { filter, filtered } = randomFilter(rng);
        const scan = scanOf(filter, filtered, limit);
        // Half of them where the read's scan ends just before, at or just after the window's end.
        const to = Number(window.to);
        const at = j % 2 === 0 ? to - scan + rng.pick([-1, 0, 1]) : Number(window.from) + rng.int(to - Number(window.from) + 30);
        if (at < Number(window.from)) continue;
        const after = String(at);
        const fromWindow = readFromWindow(window, after, limit, scan, filter);
        if (fromWindow === undefined) {
          outside += 1;
          continue;
        }
        answered += 1;
        const sql = toPage(await changes.page(kysely, after, limit, scan, filter), after, limit, scan);
        expect({ after, limit, filter, page: toPage(fromWindow, after, limit, scan) }).toEqual({ after, limit, filter, page: sql });
      }
    }
    expect(answered).toBeGreaterThan(100);
    expect(outside).toBeGreaterThan(0);
  });
});
