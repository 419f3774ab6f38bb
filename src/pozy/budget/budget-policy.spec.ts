import {
  BudgetSettings,
  BudgetState,
  decide,
  effectiveLimit,
  emptyState,
  Lane,
  lateAfterMs,
  pauseFor,
  readState,
  recount,
  resume,
  TakeRequest,
  usedInWindow,
} from './budget-policy';

const settings: BudgetSettings = { perWindow: 600, windowMs: 60_000, reserve: 0.2, maxPauseMs: 120_000 };
const take = (lane: Lane, extra: Partial<TakeRequest> = {}): TakeRequest => ({ lane, want: 1, waitedMs: 0, ...extra });

/** Takes one token at a time for `lane` from `now` on, as fast as granted, for `ms`; the grant times. */
function drain(
  state: BudgetState,
  lane: Lane,
  from: number,
  ms: number,
  options: BudgetSettings = settings,
): { state: BudgetState; grants: number[] } {
  const grants: number[] = [];
  for (let now = from; now < from + ms;) {
    const decision = decide(state, take(lane), now, options);
    state = decision.state;
    if (decision.granted > 0) grants.push(now);
    else now += decision.waitMs;
  }
  return { state, grants };
}

describe('the shared Pozy budget', () => {
  it("starts with a burst of a tenth of the limit, then spreads requests at the limit's pace", () => {
    const { grants } = drain(emptyState(), 'bulk', 1_000_000, 10_000);

    // 60 at once, then one every 100 ms.
    expect(grants.filter((t) => t === 1_000_000)).toHaveLength(60);
    expect(grants.length).toBeGreaterThanOrEqual(60 + 98);
    expect(grants.length).toBeLessThanOrEqual(60 + 101);
  });

  it('never grants more than the limit in any window, whatever the pace asked', () => {
    const small = { ...settings, perWindow: 30, windowMs: 3_000 };
    const { grants } = drain(emptyState(), 'realtime', 5_000_000, 20_000, small);

    for (const start of grants) {
      expect(grants.filter((t) => t >= start && t < start + small.windowMs).length).toBeLessThanOrEqual(30);
    }
    // And it is not much below it either: the budget is spent.
    expect(grants.length).toBeGreaterThan(30 * (20_000 / 3_000) * 0.85);
  });

  it('refuses a lower lane while a higher one waits, then lets it through once the higher one is served', () => {
    let state = emptyState();
    for (let d = decide(state, take('bulk'), 0, settings); d.granted > 0; d = decide(state, take('bulk'), 0, settings)) state = d.state;
    // The burst is spent: the realtime lane has to wait for the next token, and says so.
    const denied = decide(state, take('realtime'), 0, settings);
    expect(denied).toMatchObject({ granted: 0, reason: 'tokens', waitMs: 100 });
    state = denied.state;

    // The token frees up: the bulk lane asks first, and is refused for the waiting realtime lane.
    const bulk = decide(state, take('bulk'), 100, settings);
    expect(bulk).toMatchObject({ granted: 0, reason: 'priority' });
    const realtime = decide(bulk.state, take('realtime'), 100, settings);
    expect(realtime.granted).toBe(1);

    // Once the realtime lane's mark has lapsed, bulk goes again.
    const later = decide(realtime.state, take('bulk'), 100 + bulk.waitMs, settings);
    expect(later.granted).toBe(1);
  });

  it('leaves the last twentieth of a window the bulk lane filled to the realtime lane', () => {
    const small = { ...settings, perWindow: 40, windowMs: 2_000 };
    const bulk = drain(emptyState(), 'bulk', 0, 2_000, small);

    expect(bulk.grants).toHaveLength(38);
    const realtime = decide(bulk.state, take('realtime'), 2_000 - 1, small);
    expect(realtime.granted).toBe(1);
  });

  it('lets a starving lower lane through once per sixth of the window', () => {
    let state = drain(emptyState(), 'bulk', 0, 1_000).state;
    let now = 1_000;
    let starvedGrants = 0;
    // The realtime lane wants a token all the time, for a whole window.
    while (now < 61_000) {
      const bulk = decide(state, take('bulk', { waitedMs: now - 1_000 }), now, settings);
      state = bulk.state;
      if (bulk.granted > 0) starvedGrants += 1;
      state = decide(state, take('realtime'), now, settings).state;
      now += 20;
    }
    expect(starvedGrants).toBeGreaterThanOrEqual(5);
    expect(starvedGrants).toBeLessThanOrEqual(7);
  });

  it('pauses everyone after a 429, until the time Pozy said', () => {
    const state = pauseFor(emptyState(), 30_000, 0, settings);

    expect(decide(state, take('realtime'), 10_000, settings)).toMatchObject({ granted: 0, reason: 'paused', waitMs: 20_000 });
    expect(decide(state, take('realtime'), 30_000, settings).granted).toBe(1);
  });

  it('pauses no longer than maxPauseMs, however long the 429 asked for', () => {
    for (const ms of [86_400_000, 1e303, Infinity]) {
      expect(pauseFor(emptyState(), ms, 1_000, settings).pausedUntil).toBe(121_000);
    }
    // A wait that is not one (a negative) does not pause.
    expect(pauseFor(emptyState(), -5_000, 1_000, settings).pausedUntil).toBe(1_000);
  });

  it('cuts a pause stored longer than the cap (by an older version) down to the cap at the next take', () => {
    const stored = readState(JSON.parse(JSON.stringify({ ...emptyState(), tokens: null, pausedUntil: 1e300 })));

    const denied = decide(stored, take('realtime'), 5_000, settings);

    expect(denied).toMatchObject({ granted: 0, reason: 'paused', waitMs: 120_000 });
    expect(denied.state.pausedUntil).toBe(125_000);
    // The cut is stored: it does not slide along with the clock.
    expect(decide(denied.state, take('realtime'), 65_000, settings)).toMatchObject({ reason: 'paused', waitMs: 60_000 });
    expect(decide(denied.state, take('realtime'), 125_000, settings).granted).toBe(1);
  });

  it('lifts a pause when an operator resumes', () => {
    const paused = pauseFor(emptyState(), 60_000, 0, settings);

    expect(decide(resume(paused), take('realtime'), 1_000, settings).granted).toBe(1);
  });

  it("leaves others the reserve of Pozy's advertised limit once its headers show them using the key", () => {
    let state = drain(emptyState(), 'bulk', 0, 10_000).state;
    const ours = usedInWindow(state, 10_000, settings);
    // Pozy counts 400 more requests than ours: another client uses the key.
    const observed = decide(state, take('bulk', { observation: { limit: 600, remaining: 600 - ours - 400, at: 10_000 } }), 10_000, settings);
    state = observed.state;

    expect(state.remote).toMatchObject({ limit: 600, others: 400 });
    // 600 less a 20 % reserve less the other client's 400.
    expect(effectiveLimit(state, 10_000, settings)).toBe(80);
    expect(usedInWindow(state, 10_000, settings)).toBeGreaterThan(80);
    expect(decide(state, take('realtime'), 10_001, settings)).toMatchObject({ granted: 0, reason: 'window' });
  });

  it('ignores what others use once the observation is older than the window', () => {
    const state: BudgetState = { ...emptyState(), remote: { limit: 600, others: 500, at: 0 } };

    expect(effectiveLimit(state, 30_000, settings)).toBe(12);
    expect(effectiveLimit(state, 60_001, settings)).toBe(600);
  });

  it('reads a stored state back, and starts afresh from anything unreadable', () => {
    const { state } = drain(emptyState(), 'bulk', 0, 500);
    expect(readState(JSON.parse(JSON.stringify(state)))).toEqual(state);
    expect(readState('nonsense')).toEqual(emptyState());
    expect(readState({ tokens: null, slots: 'x' })).toEqual(emptyState());
  });
});

describe('a request answered late', () => {
  const small: BudgetSettings = { perWindow: 10, windowMs: 10_000, reserve: 0.2, maxPauseMs: 120_000 };

  it('counts from its answer on: a take after its grant left the window still finds the window full', () => {
    // Ten a window, one a second: the window is full at 9 s; the first, granted at 0, is answered at 3 s.
    let full = emptyState();
    for (let i = 0; i < 10; i += 1) {
      const decision = decide(full, take('realtime'), i * 1_000, small);
      expect(decision.granted).toBe(1);
      full = decision.state;
    }
    const late = recount(full, 0, 3_000, small);

    // By its grant it would have left the window (and the margin) at 10.5 s; Pozy may count it until 13 s.
    expect(decide(full, take('realtime'), 11_000, small).granted).toBe(1);
    expect(decide(late, take('realtime'), 11_000, small)).toMatchObject({ granted: 0, reason: 'window' });
    expect(usedInWindow(late, 9_999, small)).toBe(usedInWindow(full, 9_999, small));
  });

  it('is late only past half the margin the window keeps', () => {
    expect(lateAfterMs(small)).toBe(250);
    expect(lateAfterMs(settings)).toBe(500);
  });
});

describe("the shared Pozy budget and Pozy's own view of the key", () => {
  const observation = (limit: number, remaining: number, at: number, resetAt?: number) => ({ limit, remaining, at, resetAt });

  it('grants a take of several tokens what is there, never more than asked', () => {
    const first = decide(emptyState(), take('realtime', { want: 5 }), 0, settings);
    expect(first.granted).toBe(5);

    // 55 of the burst's 60 tokens are left: a take of 100 gets those.
    const second = decide(first.state, take('realtime', { want: 100 }), 0, settings);
    expect(second.granted).toBe(55);
    // None left: the next take waits for one.
    expect(decide(second.state, take('realtime', { want: 3 }), 0, settings)).toMatchObject({ granted: 0, reason: 'tokens' });
  });

  it("keeps to Pozy's advertised limit when it is below the deployment's own", () => {
    const { state } = decide(emptyState(), take('realtime', { observation: observation(120, 119, 0) }), 0, settings);

    expect(effectiveLimit(state, 1_000, settings)).toBe(120);
  });

  it('takes a little use by others for noise, not for another client', () => {
    // One request in a hundred of Pozy's limit is not ours: requests in flight when Pozy answered.
    const { state } = decide(emptyState(), take('realtime', { observation: observation(600, 600 - 6, 0) }), 0, settings);

    expect(state.remote).toMatchObject({ others: 6 });
    expect(effectiveLimit(state, 0, settings)).toBe(600);
  });

  it("keeps a trickle of Pozy's limit for events however much others use", () => {
    const { state } = decide(emptyState(), take('realtime', { observation: observation(600, 0, 0) }), 0, settings);

    expect(effectiveLimit(state, 0, settings)).toBe(12);
  });

  it('pauses everyone until the reset Pozy announced once its headers say nothing remains', () => {
    const denied = decide(emptyState(), take('realtime', { observation: observation(600, 0, 1_000, 7_000) }), 1_000, settings);

    expect(denied).toMatchObject({ granted: 0, reason: 'paused', waitMs: 6_000 });
    expect(decide(denied.state, take('realtime'), 7_000, settings).granted).toBe(1);
  });

  it('pauses no longer than maxPauseMs for a reset Pozy announced far ahead', () => {
    const denied = decide(emptyState(), take('realtime', { observation: observation(600, 0, 1_000, 86_400_000) }), 1_000, settings);

    expect(denied).toMatchObject({ granted: 0, reason: 'paused', waitMs: 120_000 });
  });

  it('does not pause for a window that our own grants filled: the window rule holds them back already', () => {
    const { state, grants } = drain(emptyState(), 'realtime', 0, 59_000);
    expect(grants).toHaveLength(600);
    // Pozy counts all 600 as ours and says nothing remains; none is another client's use.
    const full = decide(state, take('realtime', { observation: observation(600, 0, 59_000, 61_000) }), 59_000, settings);

    expect(full.state.pausedUntil).toBe(0);
    expect(full).toMatchObject({ granted: 0, reason: 'window' });
  });

  it("still pauses until Pozy's reset when another client's use filled the window", () => {
    const { state } = drain(emptyState(), 'realtime', 0, 30_000);
    const full = decide(state, take('realtime', { observation: observation(600, 0, 30_000, 31_000) }), 30_000, settings);

    expect(full).toMatchObject({ granted: 0, reason: 'paused', waitMs: 1_000 });
  });

  it("sees another client's first requests at once, though our own grants fill the window and its margin", () => {
    // A short window, where the margin is a quarter of it.
    const short: BudgetSettings = { perWindow: 60, windowMs: 2_000, reserve: 0.2, maxPauseMs: 120_000 };
    const { state, grants } = drain(emptyState(), 'realtime', 0, 4_000, short);
    const oursAtPozy = grants.filter((t) => t > 2_000 && t <= 4_000).length;
    // What the window rule counts (with its margin) is well above what Pozy counts of ours.
    expect(usedInWindow(state, 4_000, short) - oursAtPozy).toBeGreaterThanOrEqual(6);
    // Pozy counts ours that arrived within its last two seconds, and 6 of another client's.
    const observed = decide(state, take('realtime', { observation: observation(60, 60 - oursAtPozy - 6, 4_000) }), 4_000, short);

    expect(observed.state.remote?.others).toBeGreaterThanOrEqual(5);
    expect(effectiveLimit(observed.state, 4_000, short)).toBeLessThanOrEqual(48 - 5);
  });

  it('does not take its own requests for another client when the answer that tells came back slowly', () => {
    const wide: BudgetSettings = { perWindow: 600, windowMs: 2_000, reserve: 0.2, maxPauseMs: 120_000 };
    // A burst of 20 at 1.9 s, then one request granted at 3.85 s that Pozy answers at 4.05 s: it counted its window
    // when that request reached it, so all 21 are in it, and nobody else used the key.
    const burst = decide(emptyState(), take('bulk', { want: 20 }), 1_900, wide);
    expect(burst.granted).toBe(20);
    const last = decide(burst.state, take('realtime'), 3_850, wide);
    const told = observation(600, 600 - 21, 4_050);

    // Dated at the answer, Pozy's window would hold only one of ours, and the burst would look like another client.
    const unaware = decide(last.state, take('realtime', { observation: told }), 4_050, wide);
    expect(unaware.state.remote?.others).toBe(20);
    expect(effectiveLimit(unaware.state, 4_050, wide)).toBe(600 * 0.8 - 20);

    const aware = decide(last.state, take('realtime', { observation: { ...told, grantedAt: 3_850 } }), 4_050, wide);

    expect(aware.state.remote?.others).toBe(0);
    expect(effectiveLimit(aware.state, 4_050, wide)).toBe(600);
  });

  it('ignores an observation older than the one it holds', () => {
    const newer = decide(emptyState(), take('realtime', { observation: observation(600, 100, 5_000) }), 5_000, settings).state;

    const older = decide(newer, take('realtime', { observation: observation(600, 600, 4_000) }), 5_001, settings).state;

    expect(older.remote).toEqual(newer.remote);
  });

  it('never shortens a pause: a 429 with a sooner retry keeps the later one', () => {
    const state = pauseFor(pauseFor(emptyState(), 30_000, 0, settings), 5_000, 5_000, settings);

    expect(state.pausedUntil).toBe(30_000);
    expect(decide(state, take('realtime'), 20_000, settings)).toMatchObject({ reason: 'paused', waitMs: 10_000 });
  });
});
