import { BeforeApplicationShutdown, Injectable, OnModuleDestroy } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { SharedInFlight } from '../common/shared-computation';
import { AppConfig } from '../config/app-config';
import { DatabaseService, Db } from '../database/database.service';
import { ChangeFilter, ChangePageRead, ChangeRepository } from './change.repository';
import { ChangeSignal } from './change-signal';
import { oldestAvailable } from './change-cursor';
import { ChangeTail, TailOutcome, TailRequest } from './change-tail';
import { ChangePage, expiredCursor, toPage } from './change-window';
import { DEFAULT_CHANGE_LIMIT, ListChangesQuery } from './dto/list-changes.query';
import { ALL_WORKSPACES, Workspaces } from '../common/read-scope';

export type { ChangeItem, ChangePage } from './change-window';

/** A filtered read looks at most this many positions past its cursor, so it answers quickly whatever it matches. */
const FILTERED_SCAN = 10_000;
/** A long poll refused for the cap comes back after this long (other long polls end within their 30 s at most). */
const WAITERS_RETRY_AFTER_S = 5;

/**
 * GET /changes: reads the feed from a cursor, long-polling on request. A long poll behind the head reads for itself;
 * at the head it waits on the one tail reader of its database (change-tail.ts), so the statements of waiting long polls
 * do not grow with their number. At most CHANGES_MAX_WAITERS long polls at once; past it, 503.
 */
@Injectable()
export class ChangesService implements BeforeApplicationShutdown, OnModuleDestroy {
  private stopping = false;
  /** Long polls in flight, reading or waiting. */
  private longPolls = 0;
  /** One tail reader per database the feed is read from (the primary's query pool, the read replica). */
  private readonly tails = new Map<Db, ChangeTail>();
  /**
   * Reads in flight per database, by cursor, limit and filter: requests asking the same at once (a burst of long polls
   * at the head, one client repeating itself) share one statement instead of taking a connection each.
   */
  private readonly pages = new Map<Db, SharedInFlight<ChangePageRead>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly changes: ChangeRepository,
    signal: ChangeSignal,
    private readonly database: DatabaseService,
    private readonly config: AppConfig,
  ) {
    this.unsubscribe = signal.onSequenced((newest) => {
      for (const tail of this.tails.values()) tail.wake(newest);
    });
  }

  /** Waiting readers answer now with what they have: a shutdown does not wait for their long polls. */
  beforeApplicationShutdown(): void {
    this.stopping = true;
    for (const tail of this.tails.values()) tail.release();
  }

  onModuleDestroy(): void {
    this.unsubscribe();
  }

  /** `workspaces`: the reader's scope cut to what it asked for ('*': every workspace). */
  async list(query: ListChangesQuery, db: Db = this.database.db, workspaces: Workspaces = ALL_WORKSPACES): Promise<ChangePage> {
    const filter: ChangeFilter = {
      ...(workspaces === ALL_WORKSPACES ? {} : { workspaces }),
      types: query.types,
      profileId: query.profileId,
      platform: query.platform,
    };
    return this.follow(db, query.after, query.limit ?? DEFAULT_CHANGE_LIMIT, query.wait ?? 0, filter);
  }

  /**
   * A read of the feed after `after` (undefined: from the oldest change kept) with `filter`, long-polling up to
   * `waitS`: GET /changes, for a named consumer's partition too.
   */
  async follow(db: Db, after: string | undefined, limit: number, waitS: number, filter: ChangeFilter): Promise<ChangePage> {
    const filtered =
      filter.workspaces !== undefined ||
      filter.types !== undefined ||
      filter.profileId !== undefined ||
      filter.platform !== undefined ||
      filter.profileIds !== undefined ||
      filter.platforms !== undefined;
    // A partition's read takes every entry of its scan from the database (partitionOf is computed here, not there):
    // about `limit` of its own among `limit` × partitions positions.
    const scan = filter.partition ? Math.min(FILTERED_SCAN, limit * filter.partition.of * (filtered ? 4 : 1)) : filtered ? FILTERED_SCAN : limit;
    const waitMs = waitS * 1000;
    if (waitMs === 0) return this.read(db, after ?? (await this.start(db)), limit, scan, filter);
    if (this.longPolls >= this.config.changesMaxWaiters) {
      throw new ApiError(
        'too_many_waiters',
        `This replica already holds ${this.config.changesMaxWaiters} long polls (CHANGES_MAX_WAITERS); try again shortly, or without wait`,
        undefined,
        WAITERS_RETRY_AFTER_S,
      );
    }
    this.longPolls += 1;
    try {
      const deadline = Date.now() + waitMs;
      return await this.longPoll(db, { after: after ?? (await this.start(db)), limit, scan, filter, deadline });
    } finally {
      this.longPolls -= 1;
    }
  }

  /** Long polls of this process waiting at the head for a change right now. */
  get waiting(): number {
    let waiting = 0;
    for (const tail of this.tails.values()) waiting += tail.size;
    return waiting;
  }

  /** The newest cursor: after a full read of the mirror, follow the feed from here. */
  async head(db: Db = this.database.db): Promise<{ cursor: string }> {
    const { newest } = await this.changes.bounds(db);
    return { cursor: newest ?? '0' };
  }

  private async longPoll(db: Db, request: TailRequest): Promise<ChangePage> {
    const tail = this.tail(db);
    let after = request.after;
    for (;;) {
      let outcome: TailOutcome | undefined;
      if (!this.stopping && tail.covers(after)) outcome = await tail.wait({ ...request, after });
      if (outcome === undefined || outcome.kind === 'behind') {
        // Behind the head (or the tail has handed out what follows the cursor): an ordinary read, as without wait.
        const at = Date.now();
        const read = await this.page(db, after, request.limit, request.scan, request.filter);
        const expired = expiredCursor(after, read.oldest);
        if (expired) throw expired;
        const page = toPage(read, after, request.limit, request.scan);
        if (page.data.length > 0 || Date.now() >= request.deadline || this.stopping) return page;
        // Nothing matched yet: whatever a filter skipped stays skipped, and the wait goes on from there.
        after = page.nextCursor;
        // A filter skipped its whole scan and more follows: read on. Else the reader is at the head of what it saw.
        if (read.newest !== null && BigInt(after) < BigInt(read.newest)) continue;
        outcome = await tail.wait({ ...request, after }, { oldest: read.oldest, newest: read.newest, at });
      }
      if (outcome.kind === 'page') return outcome.page;
      if (outcome.kind === 'failed') throw outcome.error;
      after = outcome.after;
      if (Date.now() >= request.deadline || this.stopping) return { data: [], nextCursor: after };
    }
  }

  private read(db: Db, after: string, limit: number, scan: number, filter: ChangeFilter): Promise<ChangePage> {
    return this.page(db, after, limit, scan, filter).then((read) => {
      const expired = expiredCursor(after, read.oldest);
      if (expired) throw expired;
      return toPage(read, after, limit, scan);
    });
  }

  /** ChangeRepository.page, shared with the requests asking the same of the same database right now. */
  private page(db: Db, after: string, limit: number, scan: number, filter: ChangeFilter): Promise<ChangePageRead> {
    let pages = this.pages.get(db);
    if (!pages) {
      pages = new SharedInFlight<ChangePageRead>();
      this.pages.set(db, pages);
    }
    const key = JSON.stringify([
      after,
      limit,
      scan,
      filter.workspaces ?? null,
      filter.types ?? null,
      filter.profileId ?? null,
      filter.platform ?? null,
      filter.profileIds ?? null,
      filter.platforms ?? null,
      filter.partition ?? null,
    ]);
    return pages.get(key, () => this.changes.page(db, after, limit, scan, filter));
  }

  private tail(db: Db): ChangeTail {
    let tail = this.tails.get(db);
    if (!tail) {
      tail = new ChangeTail((after, limit) => this.changes.page(db, after, limit, limit, {}));
      this.tails.set(db, tail);
    }
    return tail;
  }

  /** Without `after`: just before the oldest change kept. */
  private async start(db: Db): Promise<string> {
    return oldestAvailable((await this.changes.bounds(db)).oldest) ?? '0';
  }
}
