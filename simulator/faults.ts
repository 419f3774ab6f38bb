/**
 * The simulator's randomness and the faults it can inject. Everything random in the simulator comes from a
 * seeded `Rng`, so a seed replays the same world, the same ids and the same fault decisions.
 */

/** sfc32: a small, fast PRNG with a 128-bit state; good enough for simulation, never for secrets. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    // splitmix32 spreads a small integer seed over the whole state; then a few rounds mix it in.
    let s = seed >>> 0;
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = 1;
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** The next 32 random bits, as an unsigned integer. */
  uint32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.uint32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** True with probability `p`; draws nothing when `p` is 0 or 1, so turning a fault off does not shift the stream. */
  chance(p: number): boolean {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(items.length)];
  }

  /** `length` lowercase hex characters. */
  hex(length: number): string {
    let out = '';
    while (out.length < length) out += this.uint32().toString(16).padStart(8, '0');
    return out.slice(0, length);
  }

  /** A 24-hex id shaped like a MongoDB ObjectId. */
  objectId(): string {
    return this.hex(24);
  }

  /** An RFC 4122 version-4 UUID made of this stream's bits. */
  uuid(): string {
    const h = this.hex(32).split('');
    h[12] = '4';
    h[16] = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
    const s = h.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  }

  /** An independent stream for another part of the simulator, so one part's draws never shift another's. */
  fork(label: number): Rng {
    return new Rng((Math.imul(this.uint32() ^ label, 0x9e3779b1) + label) >>> 0);
  }
}

/** Independent streams of one seed: world, webhook sender, API faults, ids of requests and log rows. */
export function rngStreams(seed: number): { world: Rng; sender: Rng; api: Rng; ids: Rng } {
  const root = new Rng(seed);
  return { world: new Rng(seed), sender: root.fork(1), api: root.fork(2), ids: root.fork(3) };
}

/**
 * What goes wrong, switchable at any time. Rates are probabilities in [0, 1], per delivery (webhooks) or per
 * authenticated request (API); delays are milliseconds; header values are sent as written.
 */
export interface FaultConfig {
  /** A delivery's first attempt is sent twice, at once, with different delivery ids. */
  duplicateRate: number;
  /** Each delivery waits a random [0, max) ms before its first attempt, so later events can overtake it. */
  reorderMaxDelayMs: number;
  /** A delivery is logged as failed (statusCode 0) and never sent nor retried; only a redelivery recovers it. */
  dropRate: number;
  /** The API answers 500. */
  api5xxRate: number;
  /** The API answers 429 with `Retry-After: api429RetryAfter`, whatever the rate-limit window says. */
  api429Rate: number;
  /** The `Retry-After` of those 429s, as written, whether a client can read it or not (`86400`, `1e300`); '': none. */
  api429RetryAfter: string;
  /** The `X-RateLimit-Reset` of those 429s, as written, in place of the window's; '': the window's. */
  api429RateLimitReset: string;
  /** The API answers `apiSlowMs` late. */
  apiSlowRate: number;
  apiSlowMs: number;
  /** The API never answers; the client has to give up. */
  apiTimeoutRate: number;
  /** The API resets the connection instead of answering. */
  apiResetRate: number;
  /** Added to every API answer. */
  apiLatencyMs: number;
  /**
   * Reads lag writes (a lagging read replica): for this long after a post or an account last changed (its creation
   * included), `GET /v1/posts/{id}` answers 404 for it and `GET /v1/accounts` leaves it out.
   */
  apiReadLagMs: number;
}

export const NO_FAULTS: Readonly<FaultConfig> = Object.freeze({
  duplicateRate: 0,
  reorderMaxDelayMs: 0,
  dropRate: 0,
  api5xxRate: 0,
  api429Rate: 0,
  api429RetryAfter: '1',
  api429RateLimitReset: '',
  apiSlowRate: 0,
  apiSlowMs: 0,
  apiTimeoutRate: 0,
  apiResetRate: 0,
  apiLatencyMs: 0,
  apiReadLagMs: 0,
});

const RATES = ['duplicateRate', 'dropRate', 'api5xxRate', 'api429Rate', 'apiSlowRate', 'apiTimeoutRate', 'apiResetRate'] as const;
const DELAYS = ['reorderMaxDelayMs', 'apiSlowMs', 'apiLatencyMs', 'apiReadLagMs'] as const;
const HEADERS = ['api429RetryAfter', 'api429RateLimitReset'] as const;
type HeaderFault = (typeof HEADERS)[number];
/** What an HTTP header value can carry: visible ASCII, spaces and tabs, and not too much of it. */
const HEADER_VALUE = /^[\t\x20-\x7e]{0,1000}$/;

/**
 * `base` with `patch` applied; throws on an unknown key, a rate outside [0, 1], a negative delay or a header value
 * HTTP cannot carry.
 */
export function mergeFaults(base: Readonly<FaultConfig>, patch: Partial<FaultConfig>): FaultConfig {
  const merged: FaultConfig = { ...base };
  for (const [key, value] of Object.entries(patch) as [keyof FaultConfig, unknown][]) {
    if (value === undefined) continue;
    if (!(key in NO_FAULTS)) throw new RangeError(`Unknown fault "${String(key)}"`);
    if ((HEADERS as readonly string[]).includes(key)) {
      if (typeof value !== 'string' || !HEADER_VALUE.test(value)) throw new RangeError(`Fault ${key} must be a header value (visible ASCII)`);
      merged[key as HeaderFault] = value;
      continue;
    }
    const numeric = key as Exclude<keyof FaultConfig, HeaderFault>;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new RangeError(`Fault ${key} must be a finite number`);
    if ((RATES as readonly string[]).includes(key) && (value < 0 || value > 1)) {
      throw new RangeError(`Fault ${key} must be within [0, 1], got ${value}`);
    }
    if ((DELAYS as readonly string[]).includes(key) && value < 0) throw new RangeError(`Fault ${key} must be >= 0, got ${value}`);
    merged[numeric] = value;
  }
  return merged;
}
