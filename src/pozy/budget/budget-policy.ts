/**
 * The rules of the Pozy API budget that every replica spends from, as a pure function of the shared state, so they
 * can be read (and tested) apart from the database that holds the state.
 *
 * - Pozy counts requests per API key over a sliding window (a minute). The deployment's own limit
 *   (POZY_RATE_LIMIT_PER_MINUTE) is enforced over the same window by counting grants in slots of a sixtieth of it:
 *   no window ever holds more grants than the limit. A token bucket (a tenth of the limit) spreads them out.
 * - Pozy's `X-RateLimit-*` headers tell how much of the key's limit is used: what is not ours is another client's
 *   (the team's own product). While others use the key, the deployment keeps to the advertised limit less the
 *   reserve left to them, less what they use, never below a trickle.
 * - A 429 pauses everyone until Pozy's Retry-After or Reset; so do headers saying nothing remains, unless our own
 *   grants account for all of it (the window rule then holds us back already). No pause lasts longer than
 *   `maxPauseMs` from when it is decided, whatever the headers said or an older version stored; an operator can
 *   lift one (`resume`).
 * - Lanes: a waiter denied for want of a token marks its lane as waiting; a lower lane is refused while a higher one
 *   waits, so it delays a higher one by at most the request it already holds. A lower lane waiting longer than a
 *   sixth of the window is let through once per such period, so it is never starved forever. The backfill and bulk
 *   lanes also leave the last twentieth of each window unspent, so a window they filled still has room for an
 *   event's read.
 */

/** Highest priority first. */
export const LANES = ['realtime', 'operator', 'backfill', 'bulk'] as const;
export type Lane = (typeof LANES)[number];

export interface BudgetSettings {
  /** Requests the deployment may make per window. */
  perWindow: number;
  windowMs: number;
  /** Share of Pozy's advertised limit left to the key's other users while they use it (0 to 0.9). */
  reserve: number;
  /** The longest a pause may last (POZY_MAX_PAUSE_MS): it stops every replica, so Pozy's word is capped. */
  maxPauseMs: number;
}

/** What one answer's `X-RateLimit-*` headers said, dated on the budget's clock. */
export interface Observation {
  limit: number;
  remaining: number;
  at: number;
  /** When Pozy said its next slot frees up (`X-RateLimit-Reset`), if it said. */
  resetAt?: number;
  /** When the request that Pozy answered with these headers was granted, if known. */
  grantedAt?: number;
}

export interface BudgetState {
  /** Token bucket, as of `at`. */
  tokens: number;
  at: number;
  /** Nobody sends before this (a 429). */
  pausedUntil: number;
  /** Grants per slot (`[slot index, count]`), for the slots still inside the window. */
  slots: Array<[number, number]>;
  /** Per lane (by index in LANES): until when a waiter of that lane is known to wait somewhere. */
  demandUntil: number[];
  /** Per lane: when a starving waiter of it was last let past a higher lane. */
  starvedGrantAt: number[];
  /** Pozy's view, from the newest observation: its limit, and how much of it others were using. */
  remote: { limit: number; others: number; at: number } | null;
}

export interface TakeRequest {
  lane: Lane;
  /** Tokens wanted (a replica with several waiters takes several at once). */
  want: number;
  /** How long the first waiter of that lane has waited already. */
  waitedMs: number;
  observation?: Observation;
}

export type DenyReason = 'paused' | 'window' | 'tokens' | 'priority';

export interface Decision {
  state: BudgetState;
  granted: number;
  /** When nothing was granted: how long to wait before asking again. */
  waitMs: number;
  reason?: DenyReason;
}

const SLOTS = 60;
/**
 * Grants are counted a little longer than the window: a request granted now reaches Pozy a moment later (the
 * network, a busy event loop), and must still be inside our count when Pozy counts it.
 */
const MIN_MARGIN_MS = 500;
/** Others' use below this share of Pozy's limit is noise (requests in flight are counted at grant time). */
const NOISE_SHARE = 0.01;
/** However much others use, the deployment keeps this share of Pozy's limit, so events still get read. */
const TRICKLE_SHARE = 0.02;
/** Share of each window only the realtime and operator lanes may spend. */
const HEADROOM_SHARE = 0.05;
/** The lanes that must leave that headroom. */
const BACKGROUND_LANES: readonly Lane[] = ['backfill', 'bulk'];

export function emptyState(): BudgetState {
  return { tokens: Number.NaN, at: 0, pausedUntil: 0, slots: [], demandUntil: perLane([]), starvedGrantAt: perLane([]), remote: null };
}

/** One number per lane, 0 where none is stored. */
function perLane(value: unknown): number[] {
  return LANES.map((_, i) => (Array.isArray(value) && typeof value[i] === 'number' ? value[i] : 0));
}

/** The state as stored, or a fresh one for anything unreadable: the budget must never wedge on a bad row. */
export function readState(value: unknown): BudgetState {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Partial<BudgetState>;
  return {
    tokens: typeof v.tokens === 'number' ? v.tokens : Number.NaN,
    at: typeof v.at === 'number' ? v.at : 0,
    pausedUntil: typeof v.pausedUntil === 'number' && Number.isFinite(v.pausedUntil) ? v.pausedUntil : 0,
    slots: Array.isArray(v.slots) ? v.slots.filter((s): s is [number, number] => Array.isArray(s) && s.length === 2) : [],
    demandUntil: perLane(v.demandUntil),
    starvedGrantAt: perLane(v.starvedGrantAt),
    remote: v.remote && typeof v.remote.limit === 'number' ? v.remote : null,
  };
}

const slotMs = (settings: BudgetSettings) => settings.windowMs / SLOTS;

/** Grants counted against the window ending at `now`, and its margin: every slot that overlaps them. */
export function usedInWindow(state: BudgetState, now: number, settings: BudgetSettings): number {
  return countedSlots(state, now, settings).reduce((sum, [, count]) => sum + count, 0);
}

function countedSlots(state: BudgetState, now: number, settings: BudgetSettings): Array<[number, number]> {
  const oldest = Math.floor((now - settings.windowMs - marginMs(settings)) / slotMs(settings));
  return state.slots.filter(([slot, count]) => count > 0 && slot >= oldest && slot * slotMs(settings) <= now);
}

/** Grants in the slots that overlap (`from`, `to`]. */
function grantsWithin(state: BudgetState, from: number, to: number, settings: BudgetSettings): number {
  const size = slotMs(settings);
  return state.slots.filter(([slot]) => slot * size <= to && (slot + 1) * size > from).reduce((sum, [, count]) => sum + count, 0);
}

const marginMs = (settings: BudgetSettings) => Math.max(slotMs(settings), MIN_MARGIN_MS);

/** What the deployment may use per window now: its own limit, within Pozy's, less what others use and their reserve. */
export function effectiveLimit(state: BudgetState, now: number, settings: BudgetSettings): number {
  let limit = settings.perWindow;
  const remote = state.remote;
  if (remote && now - remote.at < settings.windowMs) {
    limit = Math.min(limit, remote.limit);
    if (remote.others > Math.max(1, remote.limit * NOISE_SHARE)) {
      const trickle = Math.max(1, Math.floor(remote.limit * TRICKLE_SHARE));
      limit = Math.min(limit, Math.max(trickle, Math.floor(remote.limit * (1 - settings.reserve)) - remote.others));
    }
  }
  return Math.max(1, limit);
}

function observe(state: BudgetState, observation: Observation, settings: BudgetSettings): void {
  if (state.remote && observation.at <= state.remote.at) return;
  // Ours are the grants within the window the answer describes, without the margin (counting that would hide
  // another client's first requests behind our own); the rest of the use is someone else's. Pozy counted its window
  // when the answered request reached it: the grants that reached it by then are those granted up to that request's
  // own grant, if they took as long on the way. Dated at the answer instead, a slow round trip would count grants
  // still on their way as ours and leave out as many that Pozy did count, and a machine slowed down (a busy event
  // loop, a long answer) would take its own requests for another client's and keep the reserve from itself.
  const end = Math.min(observation.grantedAt ?? observation.at, observation.at);
  const ours = grantsWithin(state, end - settings.windowMs, end, settings);
  const others = Math.max(0, observation.limit - observation.remaining - ours);
  state.remote = { limit: observation.limit, others, at: observation.at };
  // A window full of our own grants already holds every take back until its oldest slot leaves, to the millisecond;
  // Pozy's Reset (whole seconds) is waited for only when someone else's use filled it.
  if (observation.remaining <= 0 && others > 0 && observation.resetAt !== undefined) {
    state.pausedUntil = Math.max(state.pausedUntil, observation.resetAt);
  }
}

/** Decides one take at `now` (the budget's clock, milliseconds); returns the new state to store. */
export function decide(previous: BudgetState, request: TakeRequest, now: number, settings: BudgetSettings): Decision {
  const state: BudgetState = {
    ...previous,
    slots: previous.slots.filter(([slot]) => slot * slotMs(settings) > now - 2 * settings.windowMs),
    demandUntil: [...previous.demandUntil],
    starvedGrantAt: [...previous.starvedGrantAt],
  };
  if (request.observation) observe(state, request.observation, settings);
  state.pausedUntil = cappedPause(state, now, settings);

  const limit = effectiveLimit(state, now, settings);
  const capacity = Math.max(1, Math.floor(limit / 10));
  const perMs = limit / settings.windowMs;
  state.tokens = Number.isNaN(state.tokens) ? capacity : Math.min(capacity, state.tokens + Math.max(0, now - state.at) * perMs);
  state.at = Math.max(state.at, now);

  const lane = LANES.indexOf(request.lane);
  const used = usedInWindow(state, now, settings);
  const laneLimit = BACKGROUND_LANES.includes(request.lane) ? Math.max(1, limit - Math.max(1, Math.floor(limit * HEADROOM_SHARE))) : limit;
  let reason: DenyReason | undefined;
  let waitMs = 0;
  if (now < state.pausedUntil) {
    reason = 'paused';
    waitMs = state.pausedUntil - now;
  } else if (used >= laneLimit) {
    reason = 'window';
    // The oldest counted slot stops counting once the window and its margin have passed its end.
    const oldest = Math.min(...countedSlots(state, now, settings).map(([slot]) => slot));
    waitMs = (oldest + 1) * slotMs(settings) + settings.windowMs + marginMs(settings) - now;
  } else if (state.tokens < 1) {
    reason = 'tokens';
    waitMs = (1 - state.tokens) / perMs;
  }

  // A lane below a waiting one goes only once it has starved for a sixth of the window, and then once per sixth.
  const starveMs = settings.windowMs / 6;
  const higherWaits = state.demandUntil.slice(0, lane).some((until) => until > now);
  const starving = request.waitedMs >= starveMs && now - state.starvedGrantAt[lane] >= starveMs;
  if (!reason && higherWaits && !starving) {
    reason = 'priority';
    waitMs = Math.max(...state.demandUntil.slice(0, lane)) - now;
  }

  if (reason) {
    waitMs = Math.max(1, Math.ceil(waitMs));
    // Known to wait until it is served: lower lanes keep off what frees up in the meantime.
    state.demandUntil[lane] = Math.max(state.demandUntil[lane], now + waitMs + demandTtl(limit, settings));
    return { state, granted: 0, waitMs, reason };
  }

  const granted = Math.max(1, Math.min(request.want, Math.floor(state.tokens), laneLimit - used));
  state.tokens -= granted;
  const slot = Math.floor(now / slotMs(settings));
  const current = state.slots.find(([s]) => s === slot);
  if (current) current[1] += granted;
  else state.slots.push([slot, granted]);
  if (higherWaits) state.starvedGrantAt[lane] = now;
  return { state, granted, waitMs: 0 };
}

/** How long a denied lane stays marked as waiting past its expected turn: a couple of token intervals. */
function demandTtl(limit: number, settings: BudgetSettings): number {
  return Math.max(100, (2 * settings.windowMs) / limit);
}

/**
 * How long after its grant a request may be answered and still be inside what its grant slot counts: Pozy counts a
 * request when it arrives, at the latest when it answers, and the margin covers that much. Half of it, since the
 * grant and the answer are dated on two clocks.
 */
export function lateAfterMs(settings: BudgetSettings): number {
  return marginMs(settings) / 2;
}

/**
 * A request answered later than `lateAfterMs` (a stalled network or event loop, a slow Pozy): Pozy may have counted
 * it as late as `answeredAt`, so from now on it counts from then instead of from its grant.
 */
export function recount(previous: BudgetState, grantedAt: number, answeredAt: number, settings: BudgetSettings): BudgetState {
  const from = Math.floor(grantedAt / slotMs(settings));
  const to = Math.floor(answeredAt / slotMs(settings));
  const slots = previous.slots.map(([slot, count]): [number, number] => [slot, slot === from ? count - 1 : count]).filter(([, count]) => count > 0);
  const current = slots.find(([slot]) => slot === to);
  if (current) current[1] += 1;
  else slots.push([to, 1]);
  return { ...previous, slots };
}

/** Until when nobody sends, as of `now`: never further ahead than the cap, however the pause was set. */
export function cappedPause(state: BudgetState, now: number, settings: BudgetSettings): number {
  return Math.min(state.pausedUntil, now + settings.maxPauseMs);
}

/** A 429: nobody sends for `ms` from `now` (at most the cap), or until a longer pause already set ends. */
export function pauseFor(previous: BudgetState, ms: number, now: number, settings: BudgetSettings): BudgetState {
  const until = now + Math.min(Math.max(0, ms), settings.maxPauseMs);
  return { ...previous, pausedUntil: Math.max(cappedPause(previous, now, settings), until) };
}

/** An operator lifts the pause: every replica may send again at its next take. */
export function resume(previous: BudgetState): BudgetState {
  return { ...previous, pausedUntil: 0 };
}
