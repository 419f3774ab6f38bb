import { randomUUID } from 'node:crypto';
import { Tracing } from '../tracing/tracing.service';
import { Injectable, Logger } from '@nestjs/common';
import type { Db } from '../database/database.service';
import { TableStatistics } from '../database/table-statistics';
import { TightHeap } from './tight-heap';
import { MetricsService } from '../metrics/metrics.service';
import { AccountMirrorRepository } from '../mirror/accounts/account-mirror.repository';
import { holds, PostMirrorRepository, PostVersion } from '../mirror/posts/post-mirror.repository';
import { PozyAccountDto } from '../pozy/dto/pozy-account.dto';
import { PozyPostDto } from '../pozy/dto/pozy-post.dto';
import { PostsPage, POSTS_PAGE_LIMIT, PozyClient } from '../pozy/pozy-client.service';
import { PozyRateLimitedError, PozyUnavailableError } from '../pozy/pozy-errors';
import { WorkerService } from '../queue/worker.service';
import { postsSeenIn, RunProgress, SweepCounts, SweepResource, SweepRun, SweepRunRepository } from './sweep-run.repository';

/**
 * Each page is read from `offset - OVERLAP`: its first post must be one already seen, or posts deleted behind the
 * cursor have shifted the list and the page would skip some; then the run steps back. Offset paging is all Pozy has.
 */
const OVERLAP = 10;
/** Pages requested ahead of the one being written, so the budget, not the round trips, sets the pace. */
const PREFETCH = 3;
/** Post pages written at once: one's statements run while the others' do, on PostgreSQL's other cores. */
const PAGES_WRITING = 3;
/**
 * While this process runs reads events asked for (or began one this recently), one page at a time: three pages at once
 * take every core of a small machine, and another workspace's read then waited 0.4 s instead of 0.06 s.
 */
const YIELD_TO_JOBS_MS = 1_000;
/** Posts the walk for what the listing missed reads from Pozy at once, to confirm each is gone. */
const VERIFY_CONCURRENCY = 8;
/** Accounts written per transaction (Pozy lists them all in one answer). */
const ACCOUNT_BATCH = 500;
/**
 * Listings of the posts at most: another is made when the last one ends with Pozy counting fewer posts than it saw
 * (some were deleted after it saw them, without an event) or more (it missed some).
 */
const MAX_PASSES = 3;
/** How long announced deletions get to reach the mirror before a listing that ended short is made again. */
const SETTLE_BEFORE_ANOTHER_PASS_MS = 3_000;
/** A progress line every this many pages. */
const LOG_EVERY_PAGES = 10;
const MAX_PATIENCE_MS = 60_000;
/** The tables a run's pages fill (the mirror, its feed, history and outbox, the run's own record of what it saw): kept analyzed. */
const FILLED_TABLES = ['post', 'account', 'change', 'resource_version', 'notification', 'sweep_seen'] as const;

/** A listed page's posts to write, and the mirror's version of those it holds; `posts` is emptied once they are taken. */
interface PageToWrite {
  posts: PozyPostDto[];
  mirrored: Map<string, PostVersion>;
}

/** The run was asked to stop (the service is shutting down): it stays `running`, for the next start to resume. */
export class StopRequested extends Error {
  constructor() {
    super('stopping');
    this.name = 'StopRequested';
  }
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };
const settle = <T>(promise: Promise<T>): Promise<Settled<T>> =>
  promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
const unwrap = <T>(settled: Settled<T>): T => {
  if (!settled.ok) throw settled.error;
  return settled.value;
};

/** Every post and account the run listed: at most the rows it wrote to any one of FILLED_TABLES. */
const itemsSeen = (run: SweepRun): number => [run.posts, run.accounts].reduce((sum, c) => sum + c.created + c.changed + c.deleted + c.unchanged, 0);

const count = (counts: Partial<SweepCounts>, outcome: keyof SweepCounts, n: number) => {
  if (n > 0) counts[outcome] = (counts[outcome] ?? 0) + n;
};

/** One run being executed: what it is, who owns it, and whether it must stop. */
class Execution {
  pagesSinceLog = 0;
  waiting = false;
  /** List requests made since the last checkpoint (pages read ahead included). */
  requested = 0;
  /** Set once the run has ended one way or another: what it still has in flight stops at its next step. */
  ended = false;

  constructor(
    public run: SweepRun,
    readonly owner: string,
    private readonly stop: AbortSignal,
    /** The run's workspace's client. */
    readonly pozy: PozyClient,
  ) {}

  checkStop(): void {
    if (this.ended || this.stop.aborted) throw new StopRequested();
  }

  /**
   * `work`, unless the run is asked to stop first (a request waiting for the budget can wait long). A listener per
   * call, removed once the work ends: racing every page against one never-settling promise would keep every page.
   */
  orStop<T>(work: Promise<T>): Promise<T> {
    if (this.stop.aborted) return Promise.reject(new StopRequested());
    return new Promise<T>((resolve, reject) => {
      const onStop = () => reject(new StopRequested());
      this.stop.addEventListener('abort', onStop, { once: true });
      void work.then(resolve, reject).finally(() => this.stop.removeEventListener('abort', onStop));
    });
  }

  sleep(ms: number): Promise<void> {
    return this.orStop(new Promise((resolve) => setTimeout(resolve, ms).unref()));
  }
}

/**
 * Executes an import or sweep run from its checkpoint to its end: lists every account, then every post (oldest
 * created first, a page at a time, each page written through the same guarded statements as reconcile jobs, with
 * its checkpoint, in one transaction), then walks the mirror for what Pozy no longer lists. Memory holds a few
 * pages, whatever the workspace's size: what the run has seen is kept in the database (`sweep_seen`).
 * Pozy being unavailable or rate limiting only makes it wait; its requests go in the budget's lowest lane.
 */
@Injectable()
export class SweepRunner {
  private readonly logger = new Logger(SweepRunner.name);

  constructor(
    private readonly runs: SweepRunRepository,
    private readonly posts: PostMirrorRepository,
    private readonly accounts: AccountMirrorRepository,
    private readonly metrics: MetricsService,
    private readonly statistics: TableStatistics,
    private readonly tracing: Tracing,
    private readonly worker: WorkerService,
    private readonly heap: TightHeap,
  ) {}

  /**
   * Runs `run` (claimed by `owner`) to its end with its workspace's client and finishes it; throws StopRequested when
   * `stop` aborts first.
   */
  execute(run: SweepRun, owner: string, stop: AbortSignal, pozy: PozyClient): Promise<void> {
    // A trace of its own (`import run`, `sweep run`), with a span per page written; a resumed run is a new trace.
    const attributes = {
      'pozy_sync.run.id': run.id,
      'pozy_sync.run.kind': run.kind,
      'pozy_sync.run.dry_run': run.dryRun,
      workspaceId: run.workspaceId,
    };
    return this.heap.during(() => this.tracing.span(`${run.kind} run`, { root: true, attributes }, () => this.executeRun(run, owner, stop, pozy)));
  }

  private async executeRun(run: SweepRun, owner: string, stop: AbortSignal, pozy: PozyClient): Promise<void> {
    const x = new Execution(run, owner, stop, pozy);
    const started = Date.now();
    try {
      if (run.phase === 'accounts') await this.listAccounts(x);
      if (x.run.phase === 'posts') await this.listPosts(x);
      // The walks go by what the listings stored (when each began, which pass was last): read it back.
      x.run = (await this.runs.get(run.id)) ?? x.run;
      if (x.run.phase === 'missing-accounts') await this.walkMissingAccounts(x);
      if (x.run.phase === 'missing-posts') await this.walkMissingPosts(x);
    } finally {
      x.ended = true;
    }
    // The run's last pages analyzed before it is seen done: the first reads after an import plan with statistics.
    await this.statistics.settle(FILLED_TABLES, itemsSeen(x.run));
    await this.runs.finish(run.id, owner, 'succeeded', null);
    const done = (await this.runs.get(run.id)) ?? x.run;
    this.logger.log(
      `${title(done)} ${done.id} done in ${Math.round((Date.now() - started) / 1000)} s: posts ${JSON.stringify(done.posts)}, ` +
        `accounts ${JSON.stringify(done.accounts)}, ${done.pagesRead} list pages`,
    );
  }

  // ---- accounts: one answer lists them all ----

  private async listAccounts(x: Execution): Promise<void> {
    const answer = await this.patient(x, 'listing accounts', () => x.pozy.listAllAccounts('bulk'));
    const { accounts, sentAt } = answer;
    await this.commit(x, { accountsListedFrom: sentAt, accountsTotal: accounts.length, pagesRead: 1 });
    this.metrics.sweepPages.inc({ kind: x.run.kind });
    for (let i = 0; i < accounts.length || i === 0; i += ACCOUNT_BATCH) {
      x.checkStop();
      const batch = accounts.slice(i, i + ACCOUNT_BATCH);
      const last = i + ACCOUNT_BATCH >= accounts.length;
      await this.writeAccounts(x, batch, sentAt, last ? { phase: 'posts' } : {});
    }
  }

  private writeAccounts(x: Execution, batch: PozyAccountDto[], sentAt: Date, progress: RunProgress): Promise<void> {
    const attributes = { 'pozy_sync.run.id': x.run.id, 'pozy_sync.page.items': batch.length };
    return this.tracing.span(`${x.run.kind} accounts page`, { attributes }, () => this.writeAccountsPage(x, batch, sentAt, progress));
  }

  private async writeAccountsPage(x: Execution, batch: PozyAccountDto[], sentAt: Date, progress: RunProgress): Promise<void> {
    const seen = await this.runs.seen(
      x.run.workspaceId,
      x.run.id,
      'account',
      batch.map((a) => a._id),
    );
    const fresh = unique(
      batch.filter((a) => !seen.has(a._id)),
      (a) => a._id,
    );
    const unchanged = fresh.length > 0 ? await this.accounts.unchanged(x.run.workspaceId, fresh) : new Set<string>();
    const differing = fresh.filter((a) => !unchanged.has(a._id));
    const counts: Partial<SweepCounts> = {};
    count(counts, 'unchanged', unchanged.size);
    await this.transaction(
      x,
      { resource: 'account', ids: fresh.map((a) => a._id) },
      async (trx) => {
        if (x.run.dryRun) {
          const known = await this.accounts.existing(
            x.run.workspaceId,
            differing.map((a) => a._id),
          );
          count(counts, 'created', differing.filter((a) => !known.has(a._id)).length);
          count(counts, 'changed', differing.filter((a) => known.has(a._id)).length);
        } else if (differing.length > 0) {
          const read = { readId: randomUUID(), startedAt: sentAt, lastEventAt: new Map<string, Date>() };
          const written = await this.accounts.writeAccounts(x.run.workspaceId, differing, read, trx);
          count(counts, 'created', written.created);
          count(counts, 'changed', written.changed - written.created);
          // Listed differently, yet not written: the mirror already holds a newer read.
          count(counts, 'unchanged', differing.length - written.changed);
        }
      },
      () => ({ ...progress, accountsDone: fresh.length, accounts: counts }),
    );
    this.countItems(x, 'account', counts);
    if (progress.phase) x.run = { ...x.run, phase: progress.phase };
  }

  // ---- posts: offset pages, oldest created first ----

  private async listPosts(x: Execution): Promise<void> {
    let ahead = new Map<number, Promise<Settled<PostsPage>>>();
    const fetch = (offset: number) => {
      if (!ahead.has(offset)) {
        x.requested += 1;
        this.metrics.sweepPages.inc({ kind: x.run.kind });
        ahead.set(offset, settle(this.patient(x, `listing posts from ${offset}`, () => x.pozy.listPostsPage(offset, POSTS_PAGE_LIMIT, 'bulk'))));
      }
      return ahead.get(offset)!;
    };
    const writing = new PageWrites(() => (this.worker.busy(YIELD_TO_JOBS_MS) ? 1 : PAGES_WRITING));
    try {
      let offset = x.run.postsOffset;
      for (;;) {
        x.checkStop();
        const readAt = Math.max(0, offset - OVERLAP);
        for (let j = 0; j < PREFETCH; j += 1) void fetch(readAt + j * (POSTS_PAGE_LIMIT - OVERLAP));
        const page = unwrap(await fetch(readAt));
        ahead.delete(readAt);
        const tag = postsSeenIn(x.run.pass);
        const ids = page.posts.map((p) => p._id);
        // Seen: in a page being written when the lookup began (taken first: it may commit meanwhile), or committed.
        const writtenMeanwhile = writing.among(ids);
        // With what the mirror holds of each post, in the same statement: the write skips the posts it holds already.
        const { seen, mirrored } = await this.runs.seenAndMirrored(x.run.workspaceId, x.run.id, tag, ids);
        for (const id of writtenMeanwhile) seen.add(id);
        if (readAt > 0 && (page.posts.length === 0 || !seen.has(page.posts[0]._id))) {
          // Posts deleted behind the cursor moved the list by more than the overlap: read an earlier page again.
          this.logger.debug(`${title(x.run)} ${x.run.id}: the list moved under the cursor at ${readAt}; stepping back`);
          ahead = new Map();
          offset = Math.max(0, readAt - (POSTS_PAGE_LIMIT - OVERLAP)) + OVERLAP;
          continue;
        }
        const end = page.posts.length < POSTS_PAGE_LIMIT;
        const fresh = unique(
          page.posts.filter((p) => !seen.has(p._id)),
          (p) => p._id,
        );
        // A later pass lists every post again: the run's figures count only the posts no earlier pass saw.
        const newToRun = await this.newToRun(x, fresh);
        // What the pass saw is counted from committed pages: the end waits for the pages before it.
        if (end) await writing.drain();
        const seenInPass = (x.run.pass === 1 ? x.run.postsDone : await this.runs.seenInPass(x.run.workspaceId, x.run.id, x.run.pass)) + fresh.length;
        // Pozy's count at the end says whether this pass saw exactly the posts there are, once the deletions webhooks
        // already brought in are taken off what it saw. What is left unexplained only another listing can find.
        const unexplained = end && page.total !== undefined ? await this.unexplained(x, seenInPass, page.total) : 0;
        const again = unexplained !== 0 && x.run.pass < MAX_PASSES;
        const progress: RunProgress = {
          phase: end && !again ? 'missing-accounts' : undefined,
          missingCursor: end && !again ? null : undefined,
          nextPass: again ? true : undefined,
          postsOffset: readAt + page.posts.length,
          postsListedFrom: page.sentAt,
          postsTotal: page.total,
          postsDone: newToRun,
          pagesRead: x.requested,
        };
        x.requested = 0;
        // The page is written while the next ones are listed and checked; its checkpoint waits for the page before.
        // What the write keeps of the page is its fresh posts (not the page itself) until they are written.
        const sentAt = page.sentAt;
        const toWrite = { posts: fresh, mirrored };
        await writing.add(
          fresh.map((p) => p._id),
          (after) => this.writePosts(x, toWrite, sentAt, progress, after).then((counts) => this.countItems(x, 'post', counts)),
        );
        offset = readAt + page.posts.length;
        this.progress(x, newToRun, page.total);
        if (!end) continue;
        await writing.drain();
        if (again) {
          this.logger.warn(
            `${title(x.run)} ${x.run.id}: Pozy counts ${page.total} posts, ${
              unexplained > 0
                ? `${unexplained} fewer than this listing saw and ` + 'no webhook said were deleted'
                : `${-unexplained} more than this listing saw`
            }: listing them again to find which ` + `(pass ${x.run.pass + 1} of at most ${MAX_PASSES})`,
          );
          // What the run has listed, Pozy's count and the rate's start stay (RunProgress.nextPass).
          x.run = { ...x.run, pass: x.run.pass + 1, postsOffset: 0, postsListedFrom: null };
          ahead = new Map();
          offset = 0;
          continue;
        }
        if (unexplained !== 0) {
          this.logger.warn(
            `${title(x.run)} ${x.run.id}: after ${MAX_PASSES} listings, ${Math.abs(unexplained)} posts are still unaccounted for; the next sweep finds them`,
          );
        }
        x.run = { ...x.run, phase: 'missing-accounts', missingCursor: null };
        return;
      }
    } finally {
      // Nothing of the run is written once it has stopped or failed.
      await writing.settled();
    }
  }

  /**
   * How many of a page's posts (those its pass had not seen) no earlier pass saw either: all of them in the first
   * pass; in a later one, posts the listings before it missed (created since, or shifted past them).
   */
  private async newToRun(x: Execution, fresh: readonly PozyPostDto[]): Promise<number> {
    let ids = fresh.map((p) => p._id);
    for (let pass = 1; pass < x.run.pass && ids.length > 0; pass += 1) {
      const seen = await this.runs.seen(x.run.workspaceId, x.run.id, postsSeenIn(pass), ids);
      ids = ids.filter((id) => !seen.has(id));
    }
    return ids.length;
  }

  /**
   * How many posts the pass saw that Pozy no longer counts, and no webhook said were deleted. A deletion announced
   * just before the end may still be on its way through the reconcile jobs: it is given a moment before a whole
   * listing is spent on it.
   */
  private async unexplained(x: Execution, seenInPass: number, total: number): Promise<number> {
    const count = async () => seenInPass - (await this.runs.seenThenDeleted(x.run.workspaceId, x.run.id, x.run.pass)) - total;
    const first = await count();
    if (first <= 0) return first;
    await x.sleep(SETTLE_BEFORE_ANOTHER_PASS_MS);
    return count();
  }

  private writePosts(x: Execution, page: PageToWrite, sentAt: Date, progress: RunProgress, after: Promise<unknown>): Promise<Partial<SweepCounts>> {
    const attributes = {
      'pozy_sync.run.id': x.run.id,
      'pozy_sync.page.items': page.posts.length,
      'pozy_sync.page.offset': progress.postsOffset ?? 0,
    };
    return this.tracing.span(`${x.run.kind} posts page`, { attributes }, async (span) => {
      const counts = await this.writePostsPage(x, page, sentAt, progress, after);
      span.setAttributes(Object.fromEntries(Object.entries(counts).map(([outcome, n]) => [`pozy_sync.page.${outcome}`, n])));
      return counts;
    });
  }

  private async writePostsPage(
    x: Execution,
    page: PageToWrite,
    sentAt: Date,
    progress: RunProgress,
    after: Promise<unknown>,
  ): Promise<Partial<SweepCounts>> {
    const { mirrored } = page;
    // A row mirrored before the mirror kept whole posts is written again, whatever its version: the sweep refills it.
    let differing = page.posts.filter((post) => !holds(mirrored.get(post._id), post.updatedAt));
    const ids = page.posts.map((p) => p._id);
    const counts: Partial<SweepCounts> = {};
    // A post listed again in a later pass was counted by the first.
    const firstPass = x.run.pass === 1;
    if (firstPass) count(counts, 'unchanged', ids.length - differing.length);
    // Once written, the posts are let go: the transaction may wait a while yet for the pages before it.
    page.posts = [];
    await this.transaction(
      x,
      { resource: postsSeenIn(x.run.pass), ids },
      async (trx) => {
        const posts = differing;
        differing = [];
        if (x.run.dryRun) {
          count(counts, 'created', posts.filter((p) => !mirrored.has(p._id)).length);
          count(counts, 'changed', posts.filter((p) => mirrored.has(p._id)).length);
          return;
        }
        if (posts.length === 0) return;
        const written = await this.posts.writeMany(x.run.workspaceId, posts, { readId: randomUUID(), startedAt: sentAt, lastEventAt: null }, trx);
        count(counts, 'created', written.created);
        count(counts, 'changed', written.changed - written.created);
        // Different in the list, yet not written: a reconcile job already wrote a newer read of the post.
        if (firstPass) count(counts, 'unchanged', posts.length - written.changed);
      },
      () => ({ ...progress, posts: counts }),
      after,
    );
    return counts;
  }

  // ---- what Pozy no longer lists ----

  private async walkMissingAccounts(x: Execution): Promise<void> {
    const listedFrom = x.run.accountsListedFrom ?? x.run.startedAt;
    for (let cursor = x.run.missingCursor; ;) {
      x.checkStop();
      const chunk = await this.runs.missingAccounts(x.run.workspaceId, x.run.id, cursor, listedFrom);
      const counts: Partial<SweepCounts> = {};
      // A profile's own list says which of its accounts are gone; it is read once for all of them.
      const byProfile = new Map<string, string[]>();
      for (const { id, profileId } of chunk.missing) byProfile.set(profileId, [...(byProfile.get(profileId) ?? []), id]);
      for (const [profileId, ids] of byProfile) {
        const answer = await this.patient(x, `listing the accounts of profile ${profileId}`, () => x.pozy.listAccounts(profileId, 'bulk'));
        const listed = new Set(answer.accounts.map((a) => a._id));
        if (x.run.dryRun) {
          count(counts, 'deleted', ids.filter((id) => !listed.has(id)).length);
          continue;
        }
        const outcome = await this.accounts.writeProfile(x.run.workspaceId, profileId, answer.accounts, {
          readId: randomUUID(),
          startedAt: answer.sentAt,
          lastEventAt: new Map(),
        });
        count(counts, 'deleted', outcome.removed);
      }
      const done = chunk.last === null;
      await this.commit(
        x,
        done ? { phase: 'missing-posts', missingCursor: null, accounts: counts } : { missingCursor: chunk.last, accounts: counts },
      );
      this.countItems(x, 'account', counts);
      if (done) {
        x.run = { ...x.run, phase: 'missing-posts', missingCursor: null };
        return;
      }
      cursor = chunk.last;
    }
  }

  private async walkMissingPosts(x: Execution): Promise<void> {
    const listedFrom = x.run.postsListedFrom ?? x.run.startedAt;
    for (let cursor = x.run.missingCursor; ;) {
      x.checkStop();
      const chunk = await this.runs.missingPosts(x.run.workspaceId, x.run.id, x.run.pass, cursor, listedFrom);
      const counts: Partial<SweepCounts> = {};
      // Each one's own answer says whether it is gone, or was only missed by the list; a few are read at once.
      await inParallel(chunk.missing, VERIFY_CONCURRENCY, async (id) => {
        const answer = await this.patient(x, `reading post ${id}`, () => x.pozy.getPost(id, 'bulk'));
        const read = { readId: randomUUID(), startedAt: answer.sentAt, lastEventAt: null };
        if (!answer.found) {
          count(counts, 'deleted', 1);
          if (!x.run.dryRun) await this.posts.markDeleted(x.run.workspaceId, id, read);
          return;
        }
        const same = holds((await this.posts.versions(x.run.workspaceId, [id])).get(id), answer.post.updatedAt);
        count(counts, same ? 'unchanged' : 'changed', 1);
        if (!same && !x.run.dryRun) await this.posts.write(x.run.workspaceId, answer.post, read);
      });
      const done = chunk.last === null;
      await this.commit(x, done ? { phase: 'done', posts: counts } : { missingCursor: chunk.last, posts: counts });
      this.countItems(x, 'post', counts);
      if (done) return;
      cursor = chunk.last;
    }
  }

  // ---- machinery ----

  /**
   * Pozy unavailable or rate limiting: the run waits (longer each time, or as long as Pozy said) and tries again,
   * showing why in `lastError`. Anything else ends the run.
   */
  private async patient<T>(x: Execution, what: string, call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      x.checkStop();
      try {
        const value = await x.orStop(call());
        if (x.waiting) {
          x.waiting = false;
          await this.runs.noteError(x.run.id, x.owner, null);
        }
        return value;
      } catch (error) {
        x.checkStop();
        if (!(error instanceof PozyUnavailableError) && !(error instanceof PozyRateLimitedError)) throw error;
        const waitMs = error instanceof PozyRateLimitedError ? error.retryAfterMs : Math.min(MAX_PATIENCE_MS, 1_000 * 2 ** (attempt - 1));
        const message = `${what}: ${error.message}; trying again in ${Math.ceil(waitMs / 1000)} s`;
        this.logger.warn(`${title(x.run)} ${x.run.id}: ${message}`);
        x.waiting = true;
        await this.runs.noteError(x.run.id, x.owner, message);
        await x.sleep(waitMs);
      }
    }
  }

  /** Progress with nothing else to write. */
  private async commit(x: Execution, progress: RunProgress): Promise<void> {
    await this.runs.advance(x.run.id, x.owner, progress);
  }

  /**
   * One transaction: the mirror write (whose signals are raised once it commits) and the run's bookkeeping (what it
   * saw, and its progress once the write has counted it), so that a crash never leaves a page written without its
   * checkpoint or the other way round.
   */
  private async transaction(
    x: Execution,
    seen: { resource: SweepResource; ids: string[] },
    write: (trx: Db) => Promise<void>,
    progress: () => RunProgress,
    after?: Promise<unknown>,
  ): Promise<void> {
    await this.runs.commitPage({ workspaceId: x.run.workspaceId, id: x.run.id, owner: x.owner }, seen, write, progress, after);
    // Even a dry run writes what it saw (sweep_seen).
    void this.statistics.written(FILLED_TABLES);
    x.checkStop();
  }

  private countItems(x: Execution, resource: 'post' | 'account', counts: Partial<SweepCounts>): void {
    for (const [outcome, n] of Object.entries(counts)) this.metrics.sweepItems.inc({ kind: x.run.kind, resource, outcome }, n);
  }

  private progress(x: Execution, added: number, total: number | undefined): void {
    const postsTotal = total === undefined ? x.run.postsTotal : Math.max(total, x.run.postsTotal ?? 0);
    x.run = { ...x.run, postsDone: x.run.postsDone + added, postsTotal };
    x.pagesSinceLog += 1;
    if (x.pagesSinceLog < LOG_EVERY_PAGES) return;
    x.pagesSinceLog = 0;
    const { done, total: all, perSecond, etaSeconds } = postProgress(x.run, new Date());
    this.logger.log(
      `${title(x.run)} ${x.run.id}: ${done.toLocaleString('en')}${all === null ? '' : ` of ${all.toLocaleString('en')}`} posts` +
        `${perSecond === null ? '' : `, ${Math.round(perSecond)} posts/s`}${etaSeconds === null ? '' : `, about ${etaSeconds} s left`}`,
    );
  }
}

/**
 * How far a run's post listing has come, how fast since it (re)started, and how long the rest should take. `done` and
 * `total` only grow: each post is counted once, whichever pass listed it first, of the most posts Pozy counted. A
 * later pass's own way through the list, from its start, is `pass`.
 */
export function postProgress(
  run: Pick<SweepRun, 'postsDone' | 'postsTotal' | 'postsDoneAtResume' | 'resumedAt' | 'status' | 'phase' | 'pass' | 'postsOffset'>,
  now: Date,
): { done: number; total: number | null; perSecond: number | null; etaSeconds: number | null; pass: { done: number; total: number | null } } {
  const seconds = (now.getTime() - run.resumedAt.getTime()) / 1000;
  const sinceResume = run.postsDone - run.postsDoneAtResume;
  const perSecond = run.status === 'running' && seconds >= 1 && sinceResume > 0 ? sinceResume / seconds : null;
  const total = run.postsTotal === null ? null : Math.max(run.postsTotal, run.postsDone);
  const listing = run.phase === 'accounts' || run.phase === 'posts';
  // A later pass lists posts already counted: the rate of new ones says nothing of when it ends.
  const etaSeconds = listing && run.pass === 1 && perSecond && total !== null ? Math.ceil((total - run.postsDone) / perSecond) : null;
  const pass = { done: run.postsOffset, total: run.postsTotal === null ? null : Math.max(run.postsTotal, run.postsOffset) };
  return { done: run.postsDone, total, perSecond, etaSeconds, pass };
}

const title = (run: Pick<SweepRun, 'kind' | 'dryRun'>) => (run.kind === 'import' ? 'Import' : run.dryRun ? 'Sweep (dry run)' : 'Sweep');

function unique<T>(items: T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => (seen.has(key(item)) ? false : (seen.add(key(item)), true)));
}

/**
 * The post pages being written, oldest first, at most `atOnce()` at a time: each page's transaction writes its posts
 * while the pages before it are still committing, and waits for them before its checkpoint, so checkpoints commit in
 * page order and a crash resumes after the last page committed. A page failing fails the pages after it, and the run.
 */
export class PageWrites {
  private pages: Array<{ ids: ReadonlySet<string>; done: Promise<Settled<void>> }> = [];
  private last: Promise<unknown> = Promise.resolve();
  /** `atOnce`: the most pages under way at once now, asked before each page starts. */
  constructor(private readonly atOnce: () => number) {}

  /** Which of `ids` are in a page being written. */
  among(ids: readonly string[]): string[] {
    return ids.filter((id) => this.pages.some((page) => page.ids.has(id)));
  }

  /** Starts a page's write (given the promise of the page before it), once fewer than `atOnce()` are under way. */
  async add(ids: readonly string[], write: (after: Promise<unknown>) => Promise<void>): Promise<void> {
    while (this.pages.length >= this.atOnce()) unwrap(await this.pages.shift()!.done);
    const written = write(this.last);
    this.last = written;
    const page = { ids: new Set(ids), done: settle(written) };
    this.pages.push(page);
    // A page leaves the list as soon as it has committed: its ids are then in sweep_seen.
    void page.done.then((result) => {
      if (result.ok) this.pages = this.pages.filter((p) => p !== page);
    });
  }

  /** Waits for every page under way; throws the first failure. */
  async drain(): Promise<void> {
    while (this.pages.length > 0) unwrap(await this.pages.shift()!.done);
  }

  /** Waits for every page under way, failed or not. */
  async settled(): Promise<void> {
    await Promise.all(this.pages.map((page) => page.done));
    this.pages = [];
  }
}

/**
 * Runs `work` over `items`, at most `concurrency` at a time. The first failure stops the taking of new items and,
 * once those under way have ended, is thrown.
 */
async function inParallel<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (next < items.length && !failure) {
      try {
        await work(items[next++]);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failure) throw failure.error;
}
