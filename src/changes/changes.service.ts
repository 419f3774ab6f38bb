import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { DatabaseService, Db } from '../database/database.service';
import { ChangeFilter, ChangePageRead, ChangeRepository } from './change.repository';
import { ChangeSignal } from './change-signal';
import { nextCursor, oldestAvailable } from './change-cursor';
import { DEFAULT_CHANGE_LIMIT, ListChangesQuery } from './dto/list-changes.query';

/** A filtered read looks at most this many positions past its cursor, so it answers quickly whatever it matches. */
const FILTERED_SCAN = 10_000;
/** A long poll looks again at least this often, whatever it hears (a replica's NOTIFY can be lost with its connection). */
const RECHECK_MS = 1_000;
/** After a wake-up that found nothing yet (a read replica still replaying it), it looks again this soon. */
const WOKEN_RECHECK_MS = 50;

export interface ChangeItem {
  cursor: string;
  type: string;
  id: string;
  sequence: number;
  changedAt: string;
  post?: unknown;
  account?: unknown;
}

export interface ChangePage {
  data: ChangeItem[];
  nextCursor: string;
}

const RESYNC =
  'Resynchronise: GET /changes/head, then page GET /posts and GET /accounts from the start, then follow GET /changes?after=<the head cursor>';

/** GET /changes: reads the feed from a cursor, long-polling on request. */
@Injectable()
export class ChangesService implements BeforeApplicationShutdown {
  private stopping = false;
  /** Long polls waiting for a change right now. */
  private waitingNow = 0;

  constructor(
    private readonly changes: ChangeRepository,
    private readonly signal: ChangeSignal,
    private readonly database: DatabaseService,
  ) {}

  /** Waiting readers answer now with what they have: a shutdown does not wait for their long polls. */
  beforeApplicationShutdown(): void {
    this.stopping = true;
    this.signal.sequenced();
  }

  async list(query: ListChangesQuery, db: Db = this.database.db): Promise<ChangePage> {
    const limit = query.limit ?? DEFAULT_CHANGE_LIMIT;
    const filter: ChangeFilter = { types: query.types, profileId: query.profileId, platform: query.platform };
    const filtered = filter.types !== undefined || filter.profileId !== undefined || filter.platform !== undefined;
    const scan = filtered ? FILTERED_SCAN : limit;
    const deadline = Date.now() + (query.wait ?? 0) * 1000;
    let after = query.after ?? (await this.start(db));
    let recheckMs = RECHECK_MS;
    for (;;) {
      // Listen before reading: a position placed between the read and the wait still wakes it.
      const next = this.signal.nextSequenced(Math.max(0, Math.min(recheckMs, deadline - Date.now())));
      let read: ChangePageRead;
      try {
        read = await this.changes.page(db, after, limit, scan, filter);
      } catch (error) {
        next.cancel();
        throw error;
      }
      this.refuseExpired(after, read.oldest);
      const page = this.answer(read, after, limit, scan);
      if (page.data.length > 0 || Date.now() >= deadline || this.stopping) {
        next.cancel();
        return page;
      }
      // Nothing matched yet: whatever a filter skipped stays skipped, and the wait goes on from there.
      after = page.nextCursor;
      this.waitingNow += 1;
      try {
        recheckMs = (await next.woken) ? WOKEN_RECHECK_MS : RECHECK_MS;
      } finally {
        this.waitingNow -= 1;
      }
    }
  }

  /** Long polls of this process waiting for a change right now. */
  get waiting(): number {
    return this.waitingNow;
  }

  /** The newest cursor: after a full read of the mirror, follow the feed from here. */
  async head(db: Db = this.database.db): Promise<{ cursor: string }> {
    const { newest } = await this.changes.bounds(db);
    return { cursor: newest ?? '0' };
  }

  /** Without `after`: just before the oldest change kept. */
  private async start(db: Db): Promise<string> {
    return oldestAvailable((await this.changes.bounds(db)).oldest) ?? '0';
  }

  private refuseExpired(after: string, oldest: string | null): void {
    const oldestCursor = oldestAvailable(oldest);
    if (oldestCursor !== null && BigInt(after) < BigInt(oldestCursor)) {
      throw new ApiError(
        410,
        'cursor_expired',
        `Cursor ${after} is older than the changes kept (CHANGE_RETENTION_DAYS); the oldest cursor available is ${oldestCursor}. ${RESYNC}`,
        { oldestCursor, resync: RESYNC },
      );
    }
  }

  private answer(read: ChangePageRead, after: string, limit: number, scan: number): ChangePage {
    const data = read.rows.map((row): ChangeItem => ({
      cursor: row.position,
      type: row.type,
      id: row.resource_id,
      sequence: row.sequence,
      changedAt: row.changed_at.toISOString(),
      [row.type.startsWith('post.') ? 'post' : 'account']: row.data,
    }));
    return { data, nextCursor: nextCursor(after, read.newest, scan, data.length === limit ? data[data.length - 1].cursor : null) };
  }
}
