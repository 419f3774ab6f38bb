import { type Change, type ChangePage, type ChangeType, type PozySyncClient, PozySyncError, unwrap } from './client';
import type { CursorStore } from './cursor-stores';
import { partitionOf } from './partition';

/** A change handed to `onChange`: from the feed, or (`bootstrap: true`) from the full read of the mirror. */
export interface FollowedChange extends Omit<Change, 'workspaceId'> {
  /** The resource's workspace; null for a full-read item when no `workspace` was asked (posts do not carry it). */
  workspaceId: string | null;
  bootstrap: boolean;
}

/** What followChanges is doing, for a log line or a metric. */
export type FollowEvent =
  | { kind: 'resumed'; cursor: string }
  | { kind: 'bootstrapping'; reason: 'first-start' | 'cursor-expired'; expiredCursor?: string; oldestCursor?: string }
  | { kind: 'bootstrapped'; cursor: string; posts: number; accounts: number }
  | { kind: 'page'; cursor: string; changes: number; posts: number; accounts: number; skipped: number }
  | { kind: 'retrying'; what: string; error: unknown; delayMs: number };

export interface FollowChangesOptions {
  client: PozySyncClient;
  /** Keeps this follower's own cursor (FileCursorStore, PostgresCursorStore, or yours). Give this or `consumer`. */
  cursorStore?: CursorStore;
  /** A named consumer (POST /admin/consumers): the service keeps its position, committed after each page. */
  consumer?: string;
  /** With `consumer`: the partition this worker reads (0 to partitions − 1), and how many the consumer has (checked). */
  partition?: number;
  partitions?: number;
  /**
   * Filters, as GET /changes takes them. With `consumer` the service applies the consumer's own filters to the feed,
   * and these narrow only the full read: give the consumer's.
   */
  types?: ChangeType[];
  workspace?: string | string[];
  profileId?: string;
  platform?: string;
  /** Called once per change, in feed order; the cursor is stored after a page's changes have all returned. */
  onChange: (change: FollowedChange) => void | Promise<void>;
  onEvent?: (event: FollowEvent) => void;
  /** Stops following: the request in flight is abandoned, nothing after the last stored page is stored. */
  signal?: AbortSignal;
  /** Read the mirror whole on the first start and after the cursor expired (410); default true. */
  bootstrap?: boolean;
  /** Long-poll seconds (at most 30); default 25. */
  waitSeconds?: number;
  /** Changes per page (at most 1000); default 1000. */
  limit?: number;
  /** Waits after failures (network, 429, 5xx): from initialMs doubling to maxMs, with jitter; default 500 ms to 30 s. */
  backoff?: { initialMs?: number; maxMs?: number };
}

const BOOTSTRAP_PAGE = 500;
/** Beyond the long poll's own wait, how long a read may take before it is abandoned and tried again. */
const REQUEST_MARGIN_MS = 30_000;

class Stopped extends Error {}

const isExpired = (error: unknown): error is PozySyncError => error instanceof PozySyncError && error.code === 'cursor_expired';

function expiredEvent(cursor: string | undefined, error: PozySyncError): FollowEvent {
  const oldest = (error.details as { oldestCursor?: unknown } | undefined)?.oldestCursor;
  return {
    kind: 'bootstrapping',
    reason: 'cursor-expired',
    ...(cursor === undefined ? {} : { expiredCursor: cursor }),
    ...(typeof oldest === 'string' ? { oldestCursor: oldest } : {}),
  };
}

/** The service busy or down, the network, or a read that went silent; not an answer that needs a person, nor a bug. */
function worthRetrying(error: unknown): boolean {
  if (error instanceof PozySyncError) return error.retryable;
  // fetch's own failures (refused, reset, DNS) are TypeErrors with a cause; AbortSignal.timeout's is a TimeoutError.
  // By name, not instanceof: a test runner's sandbox or another realm has its own TypeError.
  const { name, cause } = (error ?? {}) as { name?: unknown; cause?: unknown };
  return (name === 'TypeError' && cause !== undefined) || name === 'TimeoutError';
}

/** The committed position, kept by a cursor store or by the service for a named consumer. */
interface Position {
  load(): Promise<string | undefined>;
  read(cursor: string | undefined, signal: AbortSignal): Promise<ChangePage>;
  save(cursor: string, signal: AbortSignal): Promise<void>;
}

/**
 * Follows the change feed until `signal` aborts: resumes from the stored cursor, reads the mirror whole on the
 * first start and after a 410, long-polls, backs off while the service is down, and never hands a resource's older
 * version after a newer one (the full read's versions are remembered until the feed has passed every change that
 * committed during it). Answers the last cursor stored.
 */
export async function followChanges(options: FollowChangesOptions): Promise<{ cursor: string | undefined }> {
  return new Follower(options).run();
}

class Follower {
  private readonly signal: AbortSignal;
  private readonly position: Position;
  private readonly workspaces: Array<string | undefined>;
  /** The full read's version of each resource, until the feed passes `catchUp`; then nothing is remembered. */
  private seen: Map<string, number> | undefined;
  private catchUp = 0n;
  private stored: string | undefined;

  constructor(private readonly options: FollowChangesOptions) {
    if ((options.cursorStore === undefined) === (options.consumer === undefined))
      throw new TypeError('followChanges needs a cursorStore or a consumer');
    if ((options.partition === undefined) !== (options.partitions === undefined)) throw new TypeError('partition and partitions go together');
    this.signal = options.signal ?? new AbortController().signal;
    this.position = options.consumer === undefined ? this.storedCursor(options.cursorStore!) : this.namedConsumer(options.consumer);
    const workspaces = options.workspace === undefined ? [] : ([] as string[]).concat(options.workspace);
    this.workspaces = workspaces.length === 0 ? [undefined] : workspaces;
  }

  async run(): Promise<{ cursor: string | undefined }> {
    try {
      let cursor: string | undefined;
      try {
        cursor = await this.retrying('load the cursor', () => this.position.load());
      } catch (error) {
        // A named consumer that expired while this worker was away: its first read is the 410.
        if (!isExpired(error) || this.options.bootstrap === false) throw error;
        cursor = await this.bootstrap(expiredEvent(undefined, error));
      }
      if (cursor === undefined) {
        if (this.options.bootstrap !== false) cursor = await this.bootstrap({ kind: 'bootstrapping', reason: 'first-start' });
      } else {
        this.stored = cursor;
        this.emit({ kind: 'resumed', cursor });
      }
      for (;;) cursor = await this.page(cursor);
    } catch (error) {
      if (error instanceof Stopped || this.signal.aborted) return { cursor: this.stored };
      throw error;
    }
  }

  /** Reads, hands and stores one page; answers the cursor to read after. */
  private async page(cursor: string | undefined): Promise<string | undefined> {
    let page: ChangePage;
    try {
      page = await this.retrying('read the feed', (signal) => this.position.read(cursor, signal));
    } catch (error) {
      if (!isExpired(error) || this.options.bootstrap === false) throw error;
      return this.bootstrap(expiredEvent(cursor, error));
    }
    if (page.data.length === 0 && page.nextCursor === cursor) return cursor;
    let [posts, accounts, skipped] = [0, 0, 0];
    for (const change of page.data) {
      this.stopIfAborted();
      const key = `${change.type.startsWith('post.') ? 'post' : 'account'}:${change.id}`;
      const had = this.seen?.get(key);
      if (had !== undefined && change.sequence <= had) {
        skipped += 1;
        continue;
      }
      await this.options.onChange({ ...change, bootstrap: false });
      if (change.post) posts += 1;
      else accounts += 1;
    }
    await this.save(page.nextCursor);
    if (this.seen !== undefined && BigInt(page.nextCursor) >= this.catchUp) this.seen = undefined;
    this.emit({ kind: 'page', cursor: page.nextCursor, changes: page.data.length, posts, accounts, skipped });
    return page.nextCursor;
  }

  /**
   * A full read. The head is taken first: a resource changed while the read pages past it is in the read (in some
   * version) and in the feed after that head, so following from there brings it up to date; the versions the read
   * handed are remembered so the feed's older ones of the same resources are skipped.
   */
  private async bootstrap(event: FollowEvent): Promise<string> {
    this.emit(event);
    const head = await this.head();
    const seen = new Map<string, number>();
    let [posts, accounts] = [0, 0];
    const { types } = this.options;
    const wants = (type: ChangeType) => types === undefined || types.includes(type);
    for (const workspace of this.workspaces) {
      if (wants('post.changed') || wants('post.deleted')) {
        await this.readAll('/posts', workspace, async (post: FollowedChange['post'] & object) => {
          const type = post.deletedAt === null ? 'post.changed' : 'post.deleted';
          if (!wants(type) || !this.inPartition('post', post.id)) return;
          seen.set(`post:${post.id}`, post.sequence);
          posts += 1;
          await this.options.onChange({
            cursor: head,
            workspaceId: workspace ?? null,
            type,
            id: post.id,
            sequence: post.sequence,
            changedAt: post.syncedAt,
            post,
            bootstrap: true,
          });
        });
      }
      if (wants('account.changed') || wants('account.removed')) {
        await this.readAll('/accounts', workspace, async (account: FollowedChange['account'] & object) => {
          const type = account.removedAt === null ? 'account.changed' : 'account.removed';
          if (!wants(type) || !this.inPartition('account', account.id)) return;
          seen.set(`account:${account.id}`, account.sequence);
          accounts += 1;
          await this.options.onChange({
            cursor: head,
            workspaceId: workspace ?? null,
            type,
            id: account.id,
            sequence: account.sequence,
            changedAt: account.syncedAt,
            account,
            bootstrap: true,
          });
        });
      }
    }
    // Entries up to this head may hold versions older than the ones just read; past it, every version is newer.
    this.catchUp = BigInt(await this.head());
    this.seen = seen;
    await this.save(head);
    this.emit({ kind: 'bootstrapped', cursor: head, posts, accounts });
    return head;
  }

  private async readAll<T>(path: '/posts' | '/accounts', workspace: string | undefined, each: (item: T) => Promise<void>): Promise<void> {
    const { profileId, platform } = this.options;
    let cursor: string | undefined;
    do {
      const query = {
        limit: BOOTSTRAP_PAGE,
        ...(path === '/posts' ? { includeDeleted: true } : { includeRemoved: true }),
        ...(cursor === undefined ? {} : { cursor }),
        ...(workspace === undefined ? {} : { workspace }),
        ...(profileId === undefined ? {} : { profileId }),
        ...(platform === undefined ? {} : { platform }),
      };
      const page = await this.retrying(`GET ${path}`, (signal) =>
        unwrap(
          this.options.client.GET(path, { params: { query }, signal }) as Promise<{
            data?: { data: unknown[]; nextCursor: string | null };
            response: Response;
          }>,
        ),
      );
      for (const item of page.data) {
        this.stopIfAborted();
        await each(item as T);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  private inPartition(kind: 'post' | 'account', id: string): boolean {
    const { partition, partitions } = this.options;
    return partition === undefined || partitions === undefined || partitionOf(kind, id, partitions) === partition;
  }

  private async head(): Promise<string> {
    const { cursor } = await this.retrying('GET /changes/head', (signal) => unwrap(this.options.client.GET('/changes/head', { signal })));
    return cursor;
  }

  private async save(cursor: string): Promise<void> {
    this.stopIfAborted();
    await this.retrying('store the cursor', (signal) => this.position.save(cursor, signal));
    this.stored = cursor;
  }

  private filters() {
    const { types, workspace, profileId, platform } = this.options;
    return {
      ...(types === undefined ? {} : { types: types.join(',') }),
      ...(workspace === undefined ? {} : { workspace: ([] as string[]).concat(workspace).join(',') }),
      ...(profileId === undefined ? {} : { profileId }),
      ...(platform === undefined ? {} : { platform }),
    };
  }

  private storedCursor(store: CursorStore): Position {
    return {
      load: () => store.load(),
      read: (cursor, signal) =>
        unwrap(
          this.options.client.GET('/changes', {
            params: { query: { ...this.filters(), ...(cursor === undefined ? {} : { after: cursor }), limit: this.limit(), wait: this.wait() } },
            signal: this.timeout(signal),
          }),
        ),
      save: (cursor) => store.save(cursor),
    };
  }

  /**
   * The service keeps the position: each read starts from the partition's committed cursor, and a page is committed
   * once handled. Loading is a first read: before the partition's first commit there is nothing to resume from.
   */
  private namedConsumer(consumer: string): Position {
    const partition = this.options.partition;
    const read = (signal: AbortSignal, wait: number, limit = this.limit()) =>
      unwrap(
        this.options.client.GET('/changes', {
          params: { query: { consumer, ...(partition === undefined ? {} : { partition }), limit, wait } },
          signal: this.timeout(signal),
        }),
      ).then((page) => {
        if (!('consumer' in page)) throw new TypeError('the service answered a read as consumer without the consumer: it predates named consumers');
        if (page.partitions !== (this.options.partitions ?? 1)) {
          throw new TypeError(`consumer ${consumer} has ${page.partitions} partitions; followChanges was given ${this.options.partitions ?? 1}`);
        }
        return page;
      });
    return {
      load: async () => {
        // Only to learn whether the partition was ever committed: one entry, not a page (a partition's page reads
        // limit × partitions positions), and nothing of it is handed.
        const page = await read(this.signal, 0, 1);
        return page.committedAt === null ? undefined : page.nextCursor;
      },
      read: (_cursor, signal) => read(signal, this.wait()),
      save: async (cursor, signal) => {
        const body = { consumer, ...(partition === undefined ? {} : { partition }), cursor };
        await unwrap(this.options.client.POST('/changes/commit', { body, signal }));
      },
    };
  }

  private limit(): number {
    return this.options.limit ?? 1000;
  }

  private wait(): number {
    return this.options.waitSeconds ?? 25;
  }

  /** The follower's signal, or a timeout past the long poll's wait (a connection that went silent). */
  private timeout(signal: AbortSignal): AbortSignal {
    return AbortSignal.any([signal, AbortSignal.timeout(this.wait() * 1000 + REQUEST_MARGIN_MS)]);
  }

  /** Runs `attempt` until it succeeds, backing off after each failure worth retrying; stops when the signal aborts. */
  private async retrying<T>(what: string, attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const initial = this.options.backoff?.initialMs ?? 500;
    const max = this.options.backoff?.maxMs ?? 30_000;
    for (let failures = 0; ; failures += 1) {
      this.stopIfAborted();
      try {
        return await attempt(this.signal);
      } catch (error) {
        this.stopIfAborted();
        if (!worthRetrying(error)) throw error;
        const delayMs = Math.round(Math.min(max, initial * 2 ** Math.min(failures, 16)) * (0.5 + Math.random() / 2));
        this.emit({ kind: 'retrying', what, error, delayMs });
        await this.pause(delayMs);
      }
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.signal.addEventListener('abort', done, { once: true });
    });
  }

  private stopIfAborted(): void {
    if (this.signal.aborted) throw new Stopped();
  }

  private emit(event: FollowEvent): void {
    this.options.onEvent?.(event);
  }
}
