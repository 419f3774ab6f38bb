import { Injectable, Logger } from '@nestjs/common';
import type { ConnectionObserver, DiscardCause, FailoverPool } from './failover-pool';

type DiscardListener = (pool: string, cause: DiscardCause) => void;

/** At most one warning per pool and cause in this long: a stale endpoint refuses every new connection for seconds. */
const WARN_EVERY_MS = 5_000;

/**
 * Where every pool and client reports the connections it refused or dropped (failover-pool.ts): counted by pool and
 * cause for /metrics and the status page, logged, and passed on to whoever listens (PrimaryWatch looks again at once).
 */
@Injectable()
export class ConnectionMonitor implements ConnectionObserver {
  private readonly logger = new Logger(ConnectionMonitor.name);
  private readonly counts = new Map<string, { pool: string; cause: DiscardCause; count: number; warnedAt: number }>();
  private readonly listeners: DiscardListener[] = [];
  private readonly writePools: FailoverPool[] = [];

  discarded(pool: string, cause: DiscardCause, detail: string): void {
    const key = `${pool}\u0000${cause}`;
    const entry = this.counts.get(key) ?? { pool, cause, count: 0, warnedAt: 0 };
    entry.count += 1;
    this.counts.set(key, entry);
    if (Date.now() - entry.warnedAt >= WARN_EVERY_MS) {
      entry.warnedAt = Date.now();
      this.logger.warn(`Database connection of pool ${pool} discarded (${cause}): ${detail}`);
    }
    for (const listener of this.listeners) listener(pool, cause);
  }

  onDiscard(listener: DiscardListener): void {
    this.listeners.push(listener);
  }

  /** A pool whose connections must all lead to the primary: discarded together when the primary changes. */
  track(pool: FailoverPool): void {
    this.writePools.push(pool);
  }

  /** Marks every tracked pool's connections made before `before` (ms) for discarding; answers how many. */
  discardOlderThan(before: number, detail: string): number {
    return this.writePools.reduce((marked, pool) => marked + pool.discardOlderThan(before, detail), 0);
  }

  /** Every count since the start, by pool and cause. */
  discards(): Array<{ pool: string; cause: DiscardCause; count: number }> {
    return [...this.counts.values()].map(({ pool, cause, count }) => ({ pool, cause, count }));
  }
}
