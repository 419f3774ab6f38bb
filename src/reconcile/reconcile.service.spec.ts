import { Tracing } from '../tracing/tracing.service';
import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import type { PozyPostDto } from '../pozy/dto/pozy-post.dto';
import type { Lane } from '../pozy/budget/budget-policy';
import { PozyRateLimitedError } from '../pozy/pozy-errors';
import { ReconcileService } from './reconcile.service';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';

const SKEW_MS = 5_000;
const GRACE_MS = 10_000;
const at = (seconds: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, seconds));

/**
 * What the service reads and writes, in process: the events received for each resource, its read state (the last
 * read's start, an operator's forced read), and what Pozy answers. Every call is recorded.
 */
function world() {
  return {
    latestEvent: null as Date | null,
    perAccount: new Map<string, Date>(),
    /** When the latest (non-deletion) event was received, and per account. */
    announcedAt: null as Date | null,
    announcedPerAccount: new Map<string, Date>(),
    /** Posts the mirror holds. */
    held: new Set<string>(['p1']),
    /** How far our clock is proven (by Pozy's Date headers) to run ahead of Pozy's. */
    aheadMs: 0,
    lastReadAt: null as Date | null,
    forcedAt: null as Date | null,
    pozyAnswer: { found: true as boolean, sentAt: at(30) },
    rateLimited: null as number | null,
    listed: [] as string[],
    pozyReads: [] as { resource: string; lane: Lane }[],
    writes: [] as { kind: string; id: string; read: unknown }[],
    writeOutcome: 'written' as 'written' | 'stale',
    recordedReads: [] as { key: string; startedAt: Date }[],
    postponed: [] as { key: string; ms: number }[],
    saved: [] as unknown[],
  };
}
type World = ReturnType<typeof world>;

/** The service over that world. Its constructor's collaborators, in order: this is the one place that names them. */
function build(w: World): ReconcileService {
  const pozy = {
    async getPost(id: string, lane: Lane) {
      w.pozyReads.push({ resource: `post:${id}`, lane });
      if (w.rateLimited !== null) throw new PozyRateLimitedError(w.rateLimited);
      const { found, sentAt } = w.pozyAnswer;
      return found ? { found: true as const, post: { _id: id } as PozyPostDto, sentAt } : { found: false as const, sentAt };
    },
    async listAccounts(profileId: string, lane: Lane) {
      w.pozyReads.push({ resource: `profile:${profileId}`, lane });
      return { accounts: w.listed.map((_id) => ({ _id })), sentAt: w.pozyAnswer.sentAt };
    },
  };
  const posts = {
    async write(_workspace: string, post: PozyPostDto, read: unknown) {
      w.writes.push({ kind: 'write', id: post._id, read });
      return { outcome: w.writeOutcome, created: 0, changed: 1, notified: 0, entries: [] };
    },
    async versions(_workspace: string, ids: string[]) {
      return new Map(ids.filter((id) => w.held.has(id)).map((id) => [id, { pozyUpdatedAt: null, deleted: false, whole: true }]));
    },
    async markDeleted(_workspace: string, id: string, read: unknown) {
      w.writes.push({ kind: 'markDeleted', id, read });
      // As the repository: a post the mirror never held gets a tombstone (created, nothing changed).
      if (!w.held.has(id)) return { outcome: 'written' as const, created: 1, changed: 0, notified: 0, entries: [] };
      return { outcome: w.writeOutcome, created: 0, changed: 1, notified: 0, entries: [] };
    },
  };
  const accounts = {
    async writeProfile(_workspace: string, profileId: string, _accounts: unknown[], read: unknown) {
      w.writes.push({ kind: 'writeProfile', id: profileId, read });
      const written = w.writeOutcome === 'written' ? 1 : 0;
      return { written, created: 0, removed: 0, stale: 1 - written, changed: written, notified: 0, entries: [] };
    },
  };
  // The events received for the resource.
  const events = {
    async resourceEvents() {
      return {
        latest: w.latestEvent,
        latestType: 'post.published',
        perAccount: w.perAccount,
        announcedAt: w.announcedAt,
        announcedPerAccount: w.announcedPerAccount,
      };
    },
  };
  // Its reconcile request: the read state, and what a read records.
  const requests = {
    async readState() {
      return { lastReadAt: w.lastReadAt, forcedAt: w.forcedAt, requestedAt: null };
    },
    async recordRead(_workspace: string, key: string, startedAt: Date) {
      w.recordedReads.push({ key, startedAt });
    },
    async postpone(_workspace: string, key: string, ms: number) {
      w.postponed.push({ key, ms });
    },
  };
  const config = { reconcileClockSkewMs: SKEW_MS, readLagGraceMs: GRACE_MS } as AppConfig;
  const metrics = { apiCallsSaved: { inc: (labels: unknown) => w.saved.push(labels) }, eventToMirror: { observe: () => undefined } };
  type Args = ConstructorParameters<typeof ReconcileService>;
  return new ReconcileService(
    { get: () => ({ state: 'active', client: pozy }), active: () => ({ state: 'active', client: pozy }) } as unknown as Args[0],
    posts as unknown as Args[1],
    accounts as unknown as Args[2],
    events as unknown as Args[3],
    requests as unknown as Args[4],
    config,
    metrics as unknown as Args[6],
    { aheadAtLeastMs: () => w.aheadMs } as unknown as Args[7],
    Tracing.off(),
    { record: async () => undefined } as unknown as Args[9],
  );
}

beforeAll(() => {
  Logger.overrideLogger(false);
});

describe('ReconcileService: the skip rule', () => {
  it('skips the read when the last read began after the latest event by more than the clock-skew margin', async () => {
    const w = world();
    w.latestEvent = at(0);
    w.lastReadAt = new Date(at(0).getTime() + SKEW_MS + 1);

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('skipped');

    expect(w.pozyReads).toEqual([]);
    expect(w.writes).toEqual([]);
    expect(w.recordedReads).toEqual([]);
    expect(w.saved).toEqual([{ reason: 'skipped' }]);
  });

  it.each([
    ['began exactly the margin after the event', SKEW_MS],
    ["began within the margin after the event (Pozy's clock may run ahead of ours)", SKEW_MS - 1],
    ['began at the event', 0],
    ['began before the event', -60_000],
  ])('reads when the last read %s', async (_when, offsetMs) => {
    const w = world();
    w.latestEvent = at(0);
    w.lastReadAt = new Date(at(0).getTime() + offsetMs);

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('written');

    expect(w.pozyReads).toEqual([{ resource: 'post:p1', lane: 'realtime' }]);
    expect(w.saved).toEqual([]);
  });

  it('reads a resource never read before', async () => {
    const w = world();
    w.latestEvent = at(0);

    await build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1');

    expect(w.pozyReads).toHaveLength(1);
  });

  it('reads a resource with no event (an operator resync, a sweep difference)', async () => {
    const w = world();
    w.lastReadAt = at(50);

    await build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1');

    expect(w.pozyReads).toHaveLength(1);
  });

  it("never skips an operator's forced read that no read has answered yet, and makes it in the operator lane", async () => {
    const w = world();
    w.latestEvent = at(0);
    w.lastReadAt = at(20);
    w.forcedAt = at(20);

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('written');

    expect(w.pozyReads).toEqual([{ resource: 'post:p1', lane: 'operator' }]);
  });

  it('applies the rule again once a read has answered the forced one, back in the realtime lane', async () => {
    const w = world();
    w.latestEvent = at(0);
    w.forcedAt = at(10);
    w.lastReadAt = at(20);

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('skipped');

    w.lastReadAt = at(3);
    w.forcedAt = at(2);
    await build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1');
    expect(w.pozyReads).toEqual([{ resource: 'post:p1', lane: 'realtime' }]);
  });

  it("widens the margin by how far our clock was measured to run ahead of Pozy's", async () => {
    const w = world();
    w.latestEvent = at(0);
    w.lastReadAt = new Date(at(0).getTime() + SKEW_MS + 20_000);
    w.aheadMs = 30_000;

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('written');

    w.aheadMs = 14_000;
    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('skipped');
  });

  it('applies to a profile by its latest account event', async () => {
    const w = world();
    w.latestEvent = at(0);
    w.perAccount = new Map([['a1', at(0)]]);
    w.lastReadAt = at(10);

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'profile', 'pr1')).resolves.toBe('skipped');

    w.latestEvent = at(8);
    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'profile', 'pr1')).resolves.toBe('written');
    expect(w.pozyReads).toEqual([{ resource: 'profile:pr1', lane: 'realtime' }]);
  });
});

describe('ReconcileService: a read', () => {
  it('writes the post with the time the answering request was sent and the latest event, then records that read', async () => {
    const w = world();
    w.latestEvent = at(0);
    w.pozyAnswer = { found: true, sentAt: at(31) };

    await build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1');

    expect(w.writes).toEqual([{ kind: 'write', id: 'p1', read: { readId: expect.any(String), startedAt: at(31), lastEventAt: at(0) } }]);
    expect(w.recordedReads).toEqual([{ key: 'post:p1', startedAt: at(31) }]);
  });

  it('says stale when the guarded write kept a newer state', async () => {
    const w = world();
    w.writeOutcome = 'stale';

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('stale');
    expect(w.recordedReads).toHaveLength(1);
  });

  it('marks a post Pozy answers 404 for as deleted, unless a newer state is kept', async () => {
    const w = world();
    w.pozyAnswer = { found: false, sentAt: at(40) };

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('deleted');
    expect(w.writes).toEqual([{ kind: 'markDeleted', id: 'p1', read: expect.objectContaining({ startedAt: at(40) }) }]);

    w.writeOutcome = 'stale';
    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('stale');
  });

  it('leaves only a tombstone for a post Pozy answers 404 for that the mirror never held', async () => {
    const w = world();
    w.held.clear();
    w.latestEvent = at(0);
    w.pozyAnswer = { found: false, sentAt: at(40) };

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('unknown');

    // The repository's tombstone: no endpoint answers it, and it feeds and notifies nothing.
    expect(w.writes).toEqual([{ kind: 'markDeleted', id: 'p1', read: expect.objectContaining({ startedAt: at(40) }) }]);
    expect(w.recordedReads).toEqual([{ key: 'post:p1', startedAt: at(40) }]);
  });

  it('reads again later, recording no read, a 404 that contradicts an event received within the grace', async () => {
    const w = world();
    w.latestEvent = at(0);
    w.announcedAt = new Date(Date.now() - 1_000);
    w.pozyAnswer = { found: false, sentAt: at(40) };

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('lagging');

    expect(w.writes).toEqual([]);
    expect(w.recordedReads).toEqual([]);
    expect(w.postponed).toEqual([{ key: 'post:p1', ms: expect.any(Number) }]);
    expect(w.postponed[0].ms).toBeGreaterThanOrEqual(1_000);
    expect(w.postponed[0].ms).toBeLessThanOrEqual(GRACE_MS - 1_000);
  });

  it('believes the 404 once the grace is over', async () => {
    const w = world();
    w.announcedAt = new Date(Date.now() - GRACE_MS - 1);
    w.pozyAnswer = { found: false, sentAt: at(40) };

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('deleted');
    expect(w.postponed).toEqual([]);
  });

  it('reads a profile again later when an account a recent event announced is missing from the list', async () => {
    const w = world();
    w.latestEvent = at(0);
    w.listed = ['a1'];
    w.announcedPerAccount = new Map([
      ['a1', new Date(Date.now() - 500)],
      ['a2', new Date(Date.now() - 500)],
    ]);

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'profile', 'pr1')).resolves.toBe('lagging');
    expect(w.writes).toEqual([]);
    expect(w.postponed).toEqual([{ key: 'profile:pr1', ms: expect.any(Number) }]);

    w.announcedPerAccount.set('a2', new Date(Date.now() - GRACE_MS - 1));
    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'profile', 'pr1')).resolves.toBe('written');
    expect(w.writes).toHaveLength(1);
  });

  it("writes a profile's accounts with each account's latest event", async () => {
    const w = world();
    w.perAccount = new Map([
      ['a1', at(1)],
      ['a2', at(2)],
    ]);
    w.latestEvent = at(2);

    await build(w).reconcile(DEFAULT_WORKSPACE, 'profile', 'pr1');

    expect(w.writes).toEqual([
      { kind: 'writeProfile', id: 'pr1', read: { readId: expect.any(String), startedAt: at(30), lastEventAt: w.perAccount } },
    ]);
    expect(w.recordedReads).toEqual([{ key: 'profile:pr1', startedAt: at(30) }]);
  });

  it('postpones the read by what Pozy asked when it rate-limits for long, and records no read', async () => {
    const w = world();
    w.rateLimited = 45_000;

    await expect(build(w).reconcile(DEFAULT_WORKSPACE, 'post', 'p1')).resolves.toBe('postponed');

    expect(w.postponed).toEqual([{ key: 'post:p1', ms: 45_000 }]);
    expect(w.writes).toEqual([]);
    expect(w.recordedReads).toEqual([]);
  });
});
