/** A WAL position as PostgreSQL prints it (`16/B374D848`), as a byte offset. */
export function parseLsn(text: string): bigint {
  const match = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i.exec(text);
  if (!match) throw new Error(`Not a WAL position: ${text}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/** Past this many primary positions the replica has not replayed, newer ones overwrite the newest kept. */
const MAX_PENDING = 10_000;

/**
 * A streaming replica's lag in time, from samples of the primary's WAL position and of the replica's replay position.
 * The lag is how long ago the primary was first seen past the position the replica has replayed: 0 when the replica
 * has replayed everything the primary had at its last sample. Unlike `now() - pg_last_xact_replay_timestamp()` it
 * does not grow while the primary is idle, and unlike comparing the replica's receive and replay positions it also
 * counts WAL the replica has not received (a broken connection to the primary).
 */
export class LagTracker {
  /** Positions the primary was seen at, each with when it was first seen there, the oldest first; all past `replayed`. */
  private readonly pending: Array<{ lsn: bigint; at: number }> = [];
  private replayed: bigint | undefined;
  private primarySeen = false;

  /** The primary's flushed WAL position, read at `at` (ms since the epoch). */
  primaryAt(lsn: bigint, at: number): void {
    this.primarySeen = true;
    if (this.replayed !== undefined && lsn <= this.replayed) return;
    const newest = this.pending[this.pending.length - 1];
    if (newest !== undefined && lsn <= newest.lsn) return;
    // A replica stopped for long: keep the oldest positions (they make the lag), merge the newest.
    if (this.pending.length >= MAX_PENDING) newest.lsn = lsn;
    else this.pending.push({ lsn, at });
  }

  /** The replica's replay position. */
  replayedTo(lsn: bigint): void {
    if (this.replayed !== undefined && lsn < this.replayed) return;
    this.replayed = lsn;
    const caughtUp = this.pending.findIndex((sample) => sample.lsn > lsn);
    this.pending.splice(0, caughtUp === -1 ? this.pending.length : caughtUp);
  }

  /** Ms the replica is behind at `now`; undefined until both servers have been sampled. */
  lagMs(now: number): number | undefined {
    if (this.replayed === undefined || !this.primarySeen) return undefined;
    const oldest = this.pending[0];
    return oldest === undefined ? 0 : Math.max(0, now - oldest.at);
  }

  /** Forgets both positions: after a failure the replica may come back as another server. */
  reset(): void {
    this.pending.length = 0;
    this.replayed = undefined;
    this.primarySeen = false;
  }
}
