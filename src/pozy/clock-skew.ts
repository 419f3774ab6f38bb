/**
 * How far our clock runs ahead of Pozy's (ms; negative: behind), from the `Date` header of Pozy's answers. The
 * header has second resolution and Pozy stamped it somewhere between our sending the request and receiving the
 * answer, so one answer only bounds the skew: Pozy's time then was within [date, date + 1 s).
 */
export interface SkewBounds {
  /** Our clock is at least this far ahead of Pozy's. */
  low: number;
  /** Our clock is at most this far ahead of Pozy's. */
  high: number;
}

/** The bounds one answer gives; undefined for a missing or unparsable `Date` header. */
export function skewBounds(sentAtMs: number, receivedAtMs: number, dateHeader: string | undefined): SkewBounds | undefined {
  const pozyMs = dateHeader === undefined ? NaN : Date.parse(dateHeader);
  if (!Number.isFinite(pozyMs)) return undefined;
  return { low: sentAtMs - (pozyMs + 1000), high: receivedAtMs - pozyMs };
}

export interface SkewEstimate extends SkewBounds {
  /** The middle of the bounds: what the gauge shows. */
  aheadMs: number;
}

/**
 * The minimum-offset idea over the recent answers: every answer's bounds hold the true skew, so their intersection
 * (the highest low, the lowest high) does too and tightens as answers come. Only the last `size` answers count, so a
 * clock stepped by NTP is followed; while old and new disagree (empty intersection), the latest answer alone counts.
 */
export class ClockSkewEstimator {
  private readonly samples: SkewBounds[] = [];

  constructor(private readonly size = 32) {}

  add(bounds: SkewBounds): void {
    this.samples.push(bounds);
    if (this.samples.length > this.size) this.samples.shift();
  }

  estimate(): SkewEstimate | undefined {
    if (this.samples.length === 0) return undefined;
    let low = -Infinity;
    let high = Infinity;
    for (const sample of this.samples) {
      low = Math.max(low, sample.low);
      high = Math.min(high, sample.high);
    }
    if (low > high) ({ low, high } = this.samples[this.samples.length - 1]);
    return { low, high, aheadMs: (low + high) / 2 };
  }
}
