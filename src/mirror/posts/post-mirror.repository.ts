import { Injectable } from '@nestjs/common';
import { Insertable, RawBuilder, sql } from 'kysely';
import { afterCommit, transaction } from '../../database/after-commit';
import { LockKey } from '../../database/advisory-lock';
import { DatabaseService, Db } from '../../database/database.service';
import type { DB } from '../../generated/kysely/database';
import { NotificationSignal } from '../../notifications/notification-signal';
import { PozyPostDto } from '../../pozy/dto/pozy-post.dto';
import { ChangeSignal } from '../../changes/change-signal';
import { RecordedEntry } from '../../changes/record-changes';
import { fanOut } from '../change-notifications';
import { eventIdsOf, versionedChangesQuery } from '../history/record-versions';
import { GuardedTable, guardedUpsert, inserted, WrittenQuery, WrittenRow } from '../mirror-write';
import { postColumns, PostColumns, profilesOf } from './post-fields';
import type { WorkspaceId } from '../../common/workspace-id';
import { GenerateSql, Sample } from '../../database/sql-snapshot';

/** What one read of Pozy learned about a post. */
export interface PostRead {
  readId: string;
  /** When the request to Pozy was sent: a 404 means the post was gone by then. */
  startedAt: Date;
  /** The latest timestamp among the events this read answers. */
  lastEventAt: Date | null;
}

export type WriteOutcome = 'written' | 'stale';

export interface PostVersion {
  pozyUpdatedAt: Date | null;
  deleted: boolean;
  whole: boolean;
}

/** Whether the mirror holds this version of the post, whole: a read of it would change nothing. */
export const holds = (row: PostVersion | undefined, updatedAt: string): boolean =>
  row !== undefined && !row.deleted && row.whole && row.pozyUpdatedAt?.getTime() === Date.parse(updatedAt);

export interface PostWriteResult {
  outcome: WriteOutcome;
  /** Posts the mirror did not hold before. */
  created: number;
  /** Posts whose mirrored state changed, created ones included (a re-read of the same version writes, yet changes nothing). */
  changed: number;
  /** Change notifications queued for subscribers, in the same statement. */
  notified: number;
  /** The feed entries it appended, for their spans: inside a recording span only (fanOutResult), none otherwise. */
  entries: RecordedEntry[];
}

/** The whole mirrored post, bookkeeping (syncedAt, lastEventAt, which read) aside; the other columns derive from these. */
const POST_STATE = [
  'status',
  'title',
  'content',
  'scheduled_for',
  'published_at',
  'platforms',
  'tags',
  'hashtags',
  'visibility',
  'extra',
  'pozy_created_at',
  'pozy_updated_at',
] as const;

/** Every column a read of Pozy gives: the state, and what derives from it for the filters. */
const FROM_READ = [...POST_STATE, 'account_ids', 'platform_names', 'error_categories', 'has_media'] as const;

/**
 * The post's guarded upsert: replace the row only with a strictly newer (Pozy updatedAt, read start) pair, and never
 * bring back a post that a later-started read found deleted. Two reads racing cannot roll the row back. A row only ever
 * seen as deleted has no Pozy version: any read that found the post after the 404's read replaces it. Any difference in
 * the whole post is a change to notify: an edit of only mediaItems, or of one target's errorCategory.
 */
const POSTS: GuardedTable<'post'> = {
  table: 'post',
  gone: 'deleted_at',
  state: POST_STATE,
  fromRead: FROM_READ,
  guard: (eb) =>
    eb.and([
      eb(
        eb.refTuple('excluded.pozy_updated_at', 'excluded.read_started_at'),
        '>',
        eb.tuple(eb.fn.coalesce('post.pozy_updated_at', sql<Date>`'-infinity'::timestamptz`), eb.ref('post.read_started_at')),
      ),
      eb.or([eb('post.deleted_at', 'is', null), eb('excluded.read_started_at', '>', eb.ref('post.read_started_at'))]),
    ]),
};

@Injectable()
export class PostMirrorRepository {
  constructor(
    private readonly database: DatabaseService,
    private readonly signal: NotificationSignal,
    private readonly changeSignal: ChangeSignal,
  ) {}

  /**
   * Writes the whole post as Pozy answered it, unless the mirror already holds a newer state; when that changes
   * the mirrored post, the matching subscribers' notifications are queued in the same statement.
   */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.POST, Sample.READ] })
  write(workspaceId: WorkspaceId, post: PozyPostDto, read: PostRead): Promise<PostWriteResult> {
    return this.writeMany(workspaceId, [post], read);
  }

  /**
   * Writes the posts one read answered (a page of Pozy's list) in one statement, each under the same guard as a
   * single post. With `trx`, it runs inside the caller's transaction (opened with `transaction`, src/database/after-commit.ts),
   * and the signals are raised once that commits.
   */
  @GenerateSql({ params: [Sample.WORKSPACE, [Sample.POST], Sample.READ] })
  async writeMany(workspaceId: WorkspaceId, posts: readonly PozyPostDto[], read: PostRead, trx?: Db): Promise<PostWriteResult> {
    const rows: Array<PostColumns & Pick<Insertable<DB['post']>, 'last_event_at'>> = posts.map((post) => ({
      ...postColumns(post),
      last_event_at: read.lastEventAt?.toISOString() ?? null,
    }));
    const accountIds = [...new Set(rows.flatMap((row) => row.account_ids))];
    const write = async (db: Db) => {
      await lockUnmirroredAccounts(db, workspaceId, sql<string[]>`${accountIds}::text[]`);
      return this.result(await this.fanOut(db, guardedUpsert(db, POSTS, workspaceId, rows, read), 'read'));
    };
    return trx ? write(trx) : transaction(this.database.db, write);
  }

  /**
   * The mirror's version of each of these posts it holds: Pozy's updatedAt, whether it is marked deleted, and whether
   * the row holds the whole post (`extra` set): a row without it is read again, whatever its version.
   */
  @GenerateSql({ params: [Sample.WORKSPACE, [Sample.UUID]] })
  async versions(workspaceId: WorkspaceId, ids: string[]): Promise<Map<string, PostVersion>> {
    if (ids.length === 0) return new Map();
    // Whether `extra` is there, not its value: a sweep's page would otherwise fetch and parse every post's rest.
    const rows = await this.database.db
      .selectFrom('post')
      .select((eb) => ['id', 'pozy_updated_at', 'deleted_at', eb('extra', 'is not', null).as('whole')])
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', (eb) => eb.fn.any(eb.val(ids)))
      .execute();
    return new Map(rows.map((r) => [r.id, { pozyUpdatedAt: r.pozy_updated_at, deleted: r.deleted_at !== null, whole: r.whole === true }]));
  }

  /**
   * Pozy answered 404: the post is marked deleted (kept, not dropped). A 404 has no Pozy version: it is dated by
   * the read's start, and only a read that started later may replace it. It wins a tie with a read that found the
   * post: deleting is the last thing that happens to a post.
   *
   * A post the mirror never held gets a tombstone: a row with no Pozy version, no sequence and no change, which no
   * endpoint answers (they read only rows with a Pozy version), and no feed entry or notification. It is there for
   * the guard alone: an older read still in flight (an import page listed before the post was deleted) must not bring
   * it back as live, and the unique key makes that read wait for this one.
   */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.UUID, Sample.READ] })
  markDeleted(workspaceId: WorkspaceId, postId: string, read: PostRead): Promise<PostWriteResult> {
    return transaction(this.database.db, async (db) => {
      await lockUnmirroredAccounts(
        db,
        workspaceId,
        sql<string[]>`coalesce((select account_ids from post where workspace_id = ${workspaceId} and id = ${postId}), '{}')`,
      );
      return this.result(await this.fanOut(db, this.deletion(db, workspaceId, postId, read), 'read'));
    });
  }

  /** The guarded upsert that marks the post deleted (markDeleted). */
  @GenerateSql({ none: 'a helper: its statement shows under markDeleted' })
  private deletion(db: Db, workspaceId: WorkspaceId, postId: string, read: PostRead) {
    return db
      .insertInto('post')
      .values((eb) => ({
        workspace_id: workspaceId,
        id: postId,
        status: 'deleted',
        platforms: JSON.stringify([]),
        account_ids: [],
        platform_names: [],
        last_event_at: read.lastEventAt,
        synced_at: eb.fn('now'),
        read_started_at: read.startedAt,
        read_id: read.readId,
        deleted_at: eb.fn('now'),
        sequence: 0,
        changed_by: null,
      }))
      .onConflict((oc) =>
        oc
          .columns(['workspace_id', 'id'])
          .doUpdateSet((eb) => {
            const wasLive = eb('post.deleted_at', 'is', null);
            return {
              deleted_at: eb.fn.coalesce('post.deleted_at', eb.fn<Date>('now')),
              last_event_at: eb.fn('greatest', ['post.last_event_at', 'excluded.last_event_at']),
              synced_at: eb.fn('now'),
              read_started_at: eb.ref('excluded.read_started_at'),
              read_id: eb.ref('excluded.read_id'),
              sequence: eb('post.sequence', '+', eb.case().when(wasLive).then(1).else(0).end()),
              changed_by: eb.case().when(wasLive).then(eb.ref('excluded.read_id')).else(eb.ref('post.changed_by')).end(),
            };
          })
          .where('excluded.read_started_at', '>=', (eb) => eb.ref('post.read_started_at')),
      )
      .returningAll()
      .returning(inserted('post'));
  }

  /**
   * Accounts the mirror just held for the first time (`accountIds`, written earlier in `trx`) can give posts that
   * target them a profile they did not have: a post's `profileIds` are its mirrored accounts' profiles. Each such
   * post has changed as GET /posts/:id answers it, so it gets a new `sequence`, a feed entry and its notifications,
   * in the caller's transaction (its signals raised once that commits). A post whose profiles stay the same (the
   * new account's profile was already among them) is left alone. A post written concurrently shares these
   * accounts' locks first: this waits for it to commit, or it waits for this one (lockUnmirroredAccounts).
   */
  @GenerateSql({ params: [Sample.WORKSPACE, [Sample.STRING], Sample.UUID, Sample.DB] })
  async refreshProfiles(workspaceId: WorkspaceId, accountIds: readonly string[], readId: string, trx: Db): Promise<PostWriteResult> {
    if (accountIds.length === 0) return { outcome: 'stale', created: 0, changed: 0, notified: 0, entries: [] };
    // Held until the caller commits: a post write naming these accounts waits for it, then sees them (lockUnmirroredAccounts).
    await lockAccounts(trx, workspaceId, accountIds);
    const fresh = sql<string[]>`${[...accountIds]}::text[]`;
    const written = trx
      .updateTable('post')
      .set((eb) => ({ sequence: eb('sequence', '+', 1), read_id: readId, changed_by: readId }))
      .where((eb) =>
        eb.and([
          eb('post.workspace_id', '=', workspaceId),
          eb('post.account_ids', '&&', fresh),
          eb.exists(
            eb
              .selectFrom('account as a')
              .select(eb.lit(1).as('one'))
              .where((eb) =>
                eb.and([
                  eb('a.workspace_id', '=', workspaceId),
                  eb('a.id', '=', eb.fn.any('post.account_ids')),
                  eb('a.id', '=', eb.fn.any(fresh)),
                  eb.not(
                    eb.exists(
                      eb
                        .selectFrom('account as b')
                        .select(eb.lit(1).as('one'))
                        .where((eb) =>
                          eb.and([
                            eb('b.workspace_id', '=', workspaceId),
                            eb('b.id', '=', eb.fn.any('post.account_ids')),
                            eb.not(eb('b.id', '=', eb.fn.any(fresh))),
                            eb('b.profile_id', '=', eb.ref('a.profile_id')),
                          ]),
                        ),
                    ),
                  ),
                ]),
              ),
          ),
        ]),
      )
      .returningAll()
      .returning(sql<boolean>`false`.as('inserted'));
    return this.result(await this.fanOut(trx, written, 'profiles'));
  }

  /**
   * `written` (the guarded write, returning the rows it touched) with the feed entries, versions and notifications of
   * what it changed, in one statement. What the feed, the history and subscribers see of a change: the post as
   * GET /posts/:id answers it. `by`: a read of Pozy wrote the rows, or only their profiles changed (a new account),
   * which no read of the post and no event of it led to.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async fanOut(db: Db, written: WrittenQuery<'post'>, by: 'read' | 'profiles') {
    const row = await fanOut(
      db,
      written,
      versionedChangesQuery(
        db
          .withTables<{ written: WrittenRow<'post'> }>()
          .selectFrom('written as w')
          // Each account found by its key rather than a scan of the account table per post, once per post (the
          // aggregate keeps it from being inlined into both uses below).
          .crossJoinLateral((eb) => profilesOf(db, eb.ref('w.workspace_id'), eb.ref('w.account_ids')).as('profiles'))
          // The read that changed the row leaves its id in changed_by: a re-read of the same state does not.
          .where('w.changed_by', '=', (eb) => eb.ref('w.read_id'))
          .select((eb) => [
            'w.workspace_id',
            eb.case().when('w.deleted_at', 'is', null).then(sql.lit('post.changed')).else(sql.lit('post.deleted')).end().as('type'),
            sql<string>`'post:' || ${eb.ref('w.id')}`.as('resource_key'),
            'w.id as resource_id',
            'w.sequence',
            'w.pozy_updated_at',
            'w.platform_names as platforms',
            'profiles.ids as profile_ids',
            // The answer the write stored (post-answer.ts), as jsonb: the same object, not built a second time.
            sql<Record<string, unknown>>`${eb.ref('w.answer')}::jsonb`.as('resource'),
            by === 'read' ? eb.ref('w.read_started_at').as('read_at') : sql<Date>`now()`.as('read_at'),
            'w.read_id',
            (by === 'read'
              ? eventIdsOf(db, {
                  workspaceId: eb.ref('w.workspace_id'),
                  resourceType: 'post',
                  resourceId: eb.ref('w.id'),
                  readAt: eb.ref('w.read_started_at'),
                })
              : sql<unknown>`NULL::jsonb`
            ).as('event_ids'),
          ]),
      ),
    ).executeTakeFirstOrThrow();
    afterCommit(db, () => {
      this.signal.queued(row.notified);
      this.changeSignal.recorded(row.recorded);
    });
    return row;
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private result(row: Awaited<ReturnType<PostMirrorRepository['fanOut']>>): PostWriteResult {
    return {
      outcome: row.written > 0 ? 'written' : 'stale',
      created: row.created,
      changed: row.changed,
      notified: row.notified,
      entries: row.entries,
    };
  }
}

/**
 * Locks, exclusively, accounts being mirrored for the first time (LockKey.AccountFirstMirrored), by workspace and id,
 * in one order, until the transaction ends.
 */
async function lockAccounts(trx: Db, workspaceId: WorkspaceId, accountIds: readonly string[]): Promise<void> {
  if (accountIds.length === 0) return;
  await lockEach(trx, workspaceId, sql<string[]>`${[...accountIds]}::text[]`, 'pg_advisory_xact_lock', false);
}

/**
 * Before a post write: shares the lock of each account in `accountIds` the mirror does not hold yet, until the
 * write's transaction ends. A transaction mirroring one of them for the first time either holds it already (this waits
 * for its commit, and the write, a later statement, sees the account) or waits for the write to commit before its
 * refreshProfiles reads the posts. Either way the post's profiles count the account, in one transaction.
 */
async function lockUnmirroredAccounts(trx: Db, workspaceId: WorkspaceId, accountIds: RawBuilder<string[]>): Promise<void> {
  await lockEach(trx, workspaceId, accountIds, 'pg_advisory_xact_lock_shared', true);
}

async function lockEach(trx: Db, workspaceId: WorkspaceId, accountIds: RawBuilder<string[]>, lock: string, unmirroredOnly: boolean) {
  await trx
    .selectFrom(sql<{ id: string }>`unnest(${accountIds})`.as<'u'>(sql`u(id)`))
    .select((eb) =>
      eb.fn(lock, [eb.val(LockKey.AccountFirstMirrored), eb.fn('hashtext', [sql`${workspaceId} || '/' || ${eb.ref('u.id')}`])]).as('locked'),
    )
    .$if(unmirroredOnly, (qb) =>
      qb.where((eb) =>
        eb.not(
          eb.exists(
            eb.selectFrom('account as a').select(eb.lit(1).as('one')).where('a.workspace_id', '=', workspaceId).whereRef('a.id', '=', 'u.id'),
          ),
        ),
      ),
    )
    .orderBy('u.id')
    .execute();
}
