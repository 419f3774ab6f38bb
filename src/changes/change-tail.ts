import { isNoConnection } from '../common/database-errors';
import type { ChangeFilter, ChangePageRead } from './change.repository';
import { ChangePage, ChangeWindow, expiredCursor, joinWindows, readFromWindow, toPage, windowOf } from './change-window';

/** The tail looks again at least this often while readers wait (a replica's NOTIFY can be lost with its connection). */
export const RECHECK_MS = 1_000;
/** After an announcement of positions it has not read yet (a read replica still replaying them), it looks again this soon. */
const WOKEN_RECHECK_MS = 50;
/** ...for at most this long after the announcement; then at RECHECK_MS. */
const CATCH_UP_MS = 2_000;
/**
 * Readers coming back behind the newest read (after an answer, while newer entries were read) are answered by a read
 * at most this soon, which all who come meanwhile share.
 */
const GATHER_MS = 25;
/** Entries per read: the feed's largest page, so a reader at the head with any `limit` is answered from one read. */
export const TAIL_BATCH = 1_000;
/**
 * Entries kept after they were handed out, so that readers coming back with the cursor of their last answer, while
 * newer entries have been read meanwhile, are answered from them by the tail's next read (which brings the feed's
 * bounds as of then: a cursor retention has passed meanwhile still answers 410) rather than by a read each.
 */
const KEPT = 1_000;

/** A long poll waiting at the head: what it asked for, and its cursor, moved on past what its filter skipped. */
export interface TailRequest {
  after: string;
  limit: number;
  scan: number;
  filter: ChangeFilter;
  /** When it answers empty (Date.now() ms). */
  deadline: number;
}

/**
 * `page`: the answer (entries, or none at the deadline or on shutdown). `behind`: the tail cannot answer this reader
 * from what it holds (entries it no longer keeps, or more than one read holds, lie after its cursor): it reads for
 * itself, from `after`. `failed`: the tail's read failed, or the cursor expired.
 */
export type TailOutcome = { kind: 'page'; page: ChangePage } | { kind: 'behind'; after: string } | { kind: 'failed'; error: unknown };

/** What a reader's own read saw, when it found nothing after its cursor. */
export interface SeenHead {
  oldest: string | null;
  newest: string | null;
  /** When that read began (Date.now() ms). */
  at: number;
}

interface Waiter extends TailRequest {
  settle: (outcome: TailOutcome) => void;
  timer: NodeJS.Timeout;
  /** The first read that may answer it: one begun after it came, when entries it has not seen were already read. */
  notBefore: number;
}

/**
 * One reader of the feed's newest entries for every long poll of this process waiting at the head, on one database
 * (the primary through the query pool, or the read replica): when positions are announced (ChangeSignal: this
 * process's sequencer, or any replica's NOTIFY), and every RECHECK_MS while readers wait, it reads the entries after
 * the newest position it has read, in one statement, and gives each reader what `ChangeRepository.page` would have
 * answered it in that snapshot (change-window.ts). Waiting readers cost one statement per read of the tail, not one
 * each, and nothing while nothing changes and nobody waits.
 */
export class ChangeTail {
  /** Every entry of (kept.from, kept.to] as of the last read; kept.to is the newest position read. */
  private kept: ChangeWindow | undefined;
  /** When the read that reached `kept.to` began. */
  private readAt = 0;
  /** The newest position announced that the tail has not read yet. */
  private target: bigint | undefined;
  /** An announcement without a position came since the last read began. */
  private dirty = false;
  /** Until then, an announcement not read yet is looked for every WOKEN_RECHECK_MS. */
  private fastUntil = 0;
  private pumping = false;
  /** Reads begun so far. */
  private reads = 0;
  /** The read a reader behind waits for: greater than `reads` while one does. */
  private wanted = 0;
  /** When the next look is due, while `timer` is set. */
  private timerDue = 0;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  /** No connection came for the last read (the query pool busy): the next look waits until then. */
  private backoffUntil = 0;
  private readonly waiters = new Set<Waiter>();

  constructor(private readonly read: (after: string, limit: number) => Promise<ChangePageRead>) {}

  get size(): number {
    return this.waiters.size;
  }

  /**
   * Whether a reader at `after` may wait here without a read of its own: the tail is live (it read within RECHECK_MS,
   * or readers wait, so it looks at least that often) and keeps every entry after `after` that it has read.
   */
  covers(after: string): boolean {
    return this.live && BigInt(after) >= this.kept!.from;
  }

  private get live(): boolean {
    return this.kept !== undefined && (this.waiters.size > 0 || Date.now() - this.readAt <= RECHECK_MS);
  }

  /**
   * Waits at the head, or behind it within the entries kept. `seen`: the reader's own read that found nothing after
   * its cursor, from which a tail that is not live starts again; without it, `covers` must hold.
   */
  wait(request: TailRequest, seen?: SeenHead): Promise<TailOutcome> {
    if (!this.live) {
      if (seen === undefined) return Promise.resolve({ kind: 'behind', after: request.after });
      // Nobody needs what was placed since the tail last read: it goes on from what this reader saw.
      const head = BigInt(seen.newest ?? '0');
      this.kept = { from: head, to: head, rows: [], positions: [], oldest: seen.oldest, newest: seen.newest };
      this.readAt = seen.at;
    }
    const kept = this.kept!;
    if (BigInt(request.after) < kept.from) return Promise.resolve({ kind: 'behind', after: request.after });
    // Entries it has not seen were read already: the next read answers it from them, with that read's bounds.
    const behind = BigInt(request.after) < kept.to;
    return new Promise<TailOutcome>((resolve) => {
      const waiter: Waiter = {
        ...request,
        settle: resolve,
        notBefore: behind ? (this.wanted = this.reads + 1) : 0,
        timer: setTimeout(
          () => this.settle(waiter, { kind: 'page', page: { data: [], nextCursor: waiter.after } }),
          Math.max(0, request.deadline - Date.now()),
        ),
      };
      this.waiters.add(waiter);
      // Announced positions the tail has not read yet: read them now rather than at the next look.
      if (this.expecting) this.pump();
      else if (!this.pumping) this.schedule();
    });
  }

  /** Positions were placed, up to `newest` when the announcement says. */
  wake(newest: string | undefined): void {
    const now = Date.now();
    if (newest === undefined) {
      this.dirty = true;
      this.fastUntil = Math.max(this.fastUntil, now + 2 * WOKEN_RECHECK_MS);
    } else {
      const position = BigInt(newest);
      if (this.kept !== undefined && position <= this.kept.to) return;
      if (this.target === undefined || position > this.target) this.target = position;
      this.fastUntil = Math.max(this.fastUntil, now + CATCH_UP_MS);
    }
    if (this.waiters.size > 0) this.pump();
  }

  /** Answers every waiting reader now with what it has (a shutdown does not wait for long polls). */
  release(): void {
    for (const waiter of [...this.waiters]) this.settle(waiter, { kind: 'page', page: { data: [], nextCursor: waiter.after } });
  }

  private get expecting(): boolean {
    return this.dirty || (this.target !== undefined && (this.kept === undefined || this.target > this.kept.to));
  }

  /** A reader's answer from the entries kept: a page, `behind`, or nothing yet (its cursor moved past what its filter skipped). */
  private answer(kept: ChangeWindow, request: TailRequest): { kind: 'done'; outcome: TailOutcome } | { kind: 'wait'; after: string } {
    const expired = expiredCursor(request.after, kept.oldest);
    if (expired) return { kind: 'done', outcome: { kind: 'failed', error: expired } };
    const read = readFromWindow(kept, request.after, request.limit, request.scan, request.filter);
    if (read === undefined) return { kind: 'done', outcome: { kind: 'behind', after: request.after } };
    const page = toPage(read, request.after, request.limit, request.scan);
    // Nothing matched: whatever its filter skipped stays skipped, and the wait goes on from there.
    return page.data.length > 0 ? { kind: 'done', outcome: { kind: 'page', page } } : { kind: 'wait', after: page.nextCursor };
  }

  private settle(waiter: Waiter, outcome: TailOutcome): void {
    if (!this.waiters.delete(waiter)) return;
    clearTimeout(waiter.timer);
    waiter.settle(outcome);
    if (this.waiters.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    void this.run().finally(() => {
      this.pumping = false;
      this.schedule();
    });
  }

  private async run(): Promise<void> {
    for (;;) {
      this.again = false;
      if (this.waiters.size === 0 || this.kept === undefined) return;
      const wasDirty = this.dirty;
      this.dirty = false;
      const base = this.kept;
      const from = base.to;
      const startedAt = Date.now();
      const number = ++this.reads;
      let read: ChangePageRead;
      try {
        read = await this.read(from.toString(), TAIL_BATCH);
      } catch (error) {
        // Every connection busy (a flood of slow searches, say): the readers wait on, to their deadline if need be, and
        // the tail looks again in RECHECK_MS, rather than each of them answering 503 and coming back at once.
        if (isNoConnection(error)) {
          this.dirty ||= wasDirty;
          this.backoffUntil = Date.now() + RECHECK_MS;
          return;
        }
        for (const waiter of [...this.waiters]) this.settle(waiter, { kind: 'failed', error });
        return;
      }
      // The tail went idle during the read and a reader started it again from its own, older read (wait()): this read
      // began past that reader's head, so joining it would claim entries it never read. Read again from there.
      if (this.kept !== base) {
        this.dirty ||= wasDirty;
        continue;
      }
      const kept = joinWindows(base, windowOf(from, read, TAIL_BATCH), KEPT);
      this.kept = kept;
      this.readAt = startedAt;
      if (this.target !== undefined && this.target <= kept.to) this.target = undefined;
      // An announcement without a position that found nothing yet (a replica behind): one more look soon.
      if (wasDirty && kept.to === from && Date.now() < this.fastUntil) this.dirty = true;
      for (const waiter of [...this.waiters]) {
        // It came during this read, behind: the next one answers it.
        if (waiter.notBefore > number) continue;
        const answered = this.answer(kept, waiter);
        if (answered.kind === 'done') this.settle(waiter, answered.outcome);
        else waiter.after = answered.after;
      }
      // More than one read holds, or positions were announced meanwhile: read on now. A replica behind waits for the
      // next look.
      if (!(read.rows.length === TAIL_BATCH || (this.again && this.expecting))) return;
    }
  }

  /** Sets the next look: at RECHECK_MS, sooner for what was announced or for readers behind; an earlier one stays. */
  private schedule(): void {
    if (this.waiters.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      return;
    }
    const now = Date.now();
    let delay = Math.max(0, this.readAt + RECHECK_MS - now);
    if (this.expecting && now < this.fastUntil) delay = Math.min(delay, WOKEN_RECHECK_MS);
    if (this.wanted > this.reads) delay = Math.min(delay, GATHER_MS);
    delay = Math.max(delay, this.backoffUntil - now);
    if (this.timer !== undefined && this.timerDue <= now + delay) return;
    clearTimeout(this.timer);
    this.timerDue = now + delay;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, delay);
  }
}
