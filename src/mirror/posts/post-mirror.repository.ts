import { Injectable } from '@nestjs/common';
import { DatabaseService, Queryable } from '../../database/database.service';
import { NotificationSignal } from '../../notifications/notification-signal';
import { ANY_SUBSCRIPTION, FAN_OUT_RESULT, fanOutCte, FanOutResult, isoSql } from '../../notifications/outbox-sql';
import { PozyPostDto } from '../../pozy/dto/pozy-post.dto';

/** What one read of Pozy learned about a post. */
export interface PostRead {
  readId: string;
  /** When the request to Pozy was sent: a 404 means the post was gone by then. */
  startedAt: Date;
  /** The latest timestamp among the events this read answers. */
  lastEventAt: Date | null;
}

export type WriteOutcome = 'written' | 'stale';

export interface PostWriteResult {
  outcome: WriteOutcome;
  /** Posts the mirror did not hold before. */
  created: number;
  /** Posts whose mirrored state changed, created ones included (a re-read of the same version writes, yet changes nothing). */
  changed: number;
  /** Change notifications queued for subscribers, in the same statement. */
  notified: number;
}

// What subscribers see of a change: the post as GET /posts/:id answers it, with its version.
const CHANGES = `
changes AS (
  SELECT CASE WHEN w.deleted_at IS NULL THEN 'post.changed' ELSE 'post.deleted' END AS type,
         'post:' || w.id AS resource_key, w.sequence, w.pozy_updated_at, w.platform_names AS platforms,
         profiles.ids AS profile_ids,
         jsonb_build_object(
           'id', w.id, 'sequence', w.sequence, 'pozyUpdatedAt', ${isoSql('w.pozy_updated_at')},
           'post', jsonb_build_object(
             'id', w.id, 'status', w.status, 'content', w.content, 'scheduledFor', ${isoSql('w.scheduled_for')},
             'publishedAt', ${isoSql('w.published_at')}, 'platforms', w.platforms, 'profileIds', to_jsonb(profiles.ids),
             'pozyCreatedAt', ${isoSql('w.pozy_created_at')}, 'pozyUpdatedAt', ${isoSql('w.pozy_updated_at')},
             'lastEventAt', ${isoSql('w.last_event_at')}, 'syncedAt', ${isoSql('w.synced_at')},
             'deletedAt', ${isoSql('w.deleted_at')})) AS data
    FROM written w
   -- Each account found by its key (a scan of the account table per post would cost a page of 500 posts a tenth
   -- of a second), once per post (OFFSET 0 keeps it from being inlined into both uses below).
   CROSS JOIN LATERAL (SELECT ARRAY(SELECT DISTINCT a.profile_id FROM unnest(w.account_ids) AS u(id) JOIN account a ON a.id = u.id
                                     ORDER BY 1) AS ids OFFSET 0) profiles
   -- The read that changed the row leaves its id in changed_by: a re-read of the same state does not.
   WHERE w.changed_by = w.read_id AND ${ANY_SUBSCRIPTION}
)`;

// The mirrored state, bookkeeping (syncedAt, lastEventAt, which read) aside: a difference is a change to notify.
const POST_DIFFERS = `
(p.status, p.content, p.scheduled_for, p.published_at, p.platforms, p.pozy_created_at, p.pozy_updated_at, p.deleted_at IS NULL)
IS DISTINCT FROM
(excluded.status, excluded.content, excluded.scheduled_for, excluded.published_at, excluded.platforms,
 excluded.pozy_created_at, excluded.pozy_updated_at, true)`;

// The guard: replace the row only with a strictly newer (Pozy updatedAt, read start) pair, and never bring back
// a post that a later-started read found deleted. Two reads racing cannot roll the row back. A row only ever seen
// as deleted has no Pozy version: any read that found the post after the 404's read replaces it.
// $1: the posts as JSON rows (one read's answer: a post, or a page of the list); $2, $3: the read's start and id.
const WRITE_POSTS = `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS t(id text, status text, content text, scheduled_for timestamptz,
    published_at timestamptz, platforms jsonb, account_ids text[], platform_names text[], pozy_created_at timestamptz,
    pozy_updated_at timestamptz, last_event_at timestamptz)
), written AS (
INSERT INTO post AS p (id, status, content, scheduled_for, published_at, platforms, account_ids, platform_names,
                       pozy_created_at, pozy_updated_at, last_event_at, synced_at, read_started_at, read_id, deleted_at,
                       sequence, changed_by)
SELECT id, status, content, scheduled_for, published_at, platforms, account_ids, platform_names, pozy_created_at,
       pozy_updated_at, last_event_at, now(), $2::timestamptz, $3::uuid, NULL, 1, $3::uuid
  FROM input
 -- One lock order for every writer, so two pages or a page and a job never deadlock.
 ORDER BY id
ON CONFLICT (id) DO UPDATE
   SET status = excluded.status, content = excluded.content, scheduled_for = excluded.scheduled_for,
       published_at = excluded.published_at, platforms = excluded.platforms, account_ids = excluded.account_ids,
       platform_names = excluded.platform_names, pozy_created_at = excluded.pozy_created_at,
       pozy_updated_at = excluded.pozy_updated_at, last_event_at = greatest(p.last_event_at, excluded.last_event_at),
       synced_at = now(), read_started_at = excluded.read_started_at, read_id = excluded.read_id, deleted_at = NULL,
       sequence = p.sequence + CASE WHEN ${POST_DIFFERS} THEN 1 ELSE 0 END,
       changed_by = CASE WHEN ${POST_DIFFERS} THEN excluded.read_id ELSE p.changed_by END
 WHERE (excluded.pozy_updated_at, excluded.read_started_at)
       > (coalesce(p.pozy_updated_at, '-infinity'::timestamptz), p.read_started_at)
   AND (p.deleted_at IS NULL OR excluded.read_started_at > p.read_started_at)
RETURNING p.*, (p.xmax = 0) AS inserted
), ${CHANGES}, ${fanOutCte('changes')}
${FAN_OUT_RESULT}`;

// A 404 has no Pozy version: it is dated by the read's start, and only a read that started later may replace it.
// It wins a tie with a read that found the post: deleting is the last thing that happens to a post.
const MARK_DELETED = `
WITH written AS (
INSERT INTO post AS p (id, status, platforms, account_ids, platform_names, last_event_at, synced_at,
                       read_started_at, read_id, deleted_at, sequence, changed_by)
VALUES ($1, 'deleted', '[]'::jsonb, '{}', '{}', $2, now(), $3, $4, now(), 1, $4)
ON CONFLICT (id) DO UPDATE
   SET deleted_at = coalesce(p.deleted_at, now()), last_event_at = greatest(p.last_event_at, excluded.last_event_at),
       synced_at = now(), read_started_at = excluded.read_started_at, read_id = excluded.read_id,
       sequence = p.sequence + CASE WHEN p.deleted_at IS NULL THEN 1 ELSE 0 END,
       changed_by = CASE WHEN p.deleted_at IS NULL THEN excluded.read_id ELSE p.changed_by END
 WHERE excluded.read_started_at >= p.read_started_at
RETURNING p.*, (p.xmax = 0) AS inserted
), ${CHANGES}, ${fanOutCte('changes')}
${FAN_OUT_RESULT}`;

@Injectable()
export class PostMirrorRepository {
  constructor(
    private readonly database: DatabaseService,
    private readonly signal: NotificationSignal,
  ) {}

  /**
   * Writes the whole post as Pozy answered it, unless the mirror already holds a newer state; when that changes
   * the mirrored post, the matching subscribers' notifications are queued in the same statement.
   */
  write(post: PozyPostDto, read: PostRead): Promise<PostWriteResult> {
    return this.writeMany([post], read);
  }

  /**
   * Writes the posts one read answered (a page of Pozy's list) in one statement, each under the same guard as a
   * single post. With `client`, it runs inside the caller's transaction, and the caller tells the
   * NotificationSignal once it commits.
   */
  async writeMany(posts: readonly PozyPostDto[], read: PostRead, client?: Queryable): Promise<PostWriteResult> {
    const rows = posts.map((post) => {
      const platforms = post.platforms.map((target) => ({
        platform: target.platform,
        accountId: target.accountId,
        status: target.status,
        platformPostId: target.platformPostId ?? null,
        platformPostUrl: target.platformPostUrl ?? null,
        publishedAt: target.publishedAt ?? null,
        errorMessage: target.errorMessage ?? null,
      }));
      return {
        id: post._id,
        status: post.status,
        content: post.content ?? null,
        scheduled_for: post.scheduledFor ?? null,
        published_at: post.publishedAt ?? null,
        platforms,
        account_ids: [...new Set(platforms.map((p) => p.accountId))],
        platform_names: [...new Set(platforms.map((p) => p.platform))],
        pozy_created_at: post.createdAt,
        pozy_updated_at: post.updatedAt,
        last_event_at: read.lastEventAt?.toISOString() ?? null,
      };
    });
    const { rows: result } = await (client ?? this.database.pool).query<FanOutResult>(WRITE_POSTS, [JSON.stringify(rows), read.startedAt, read.readId]);
    return this.result(result[0], !client);
  }

  /** The mirror's version of each of these posts it holds: Pozy's updatedAt, and whether it is marked deleted. */
  async versions(ids: string[]): Promise<Map<string, { pozyUpdatedAt: Date | null; deleted: boolean }>> {
    const { rows } = await this.database.pool.query<{ id: string; pozy_updated_at: Date | null; deleted: boolean }>(
      'SELECT id, pozy_updated_at, deleted_at IS NOT NULL AS deleted FROM post WHERE id = ANY($1::text[])',
      [ids],
    );
    return new Map(rows.map((r) => [r.id, { pozyUpdatedAt: r.pozy_updated_at, deleted: r.deleted }]));
  }

  /** Pozy answered 404: the post is marked deleted (kept, not dropped). */
  async markDeleted(postId: string, read: PostRead): Promise<PostWriteResult> {
    const { rows } = await this.database.pool.query<FanOutResult>(MARK_DELETED, [postId, read.lastEventAt, read.startedAt, read.readId]);
    return this.result(rows[0], true);
  }

  private result(row: FanOutResult, committed: boolean): PostWriteResult {
    if (committed) this.signal.queued(row.notified);
    return { outcome: row.written > 0 ? 'written' : 'stale', created: row.created, changed: row.changed, notified: row.notified };
  }
}
