import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../../database/database.service';
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

// The guard: replace the row only with a strictly newer (Pozy updatedAt, read start) pair, and never bring back
// a post that a later-started read found deleted. Two reads racing cannot roll the row back. A row only ever seen
// as deleted has no Pozy version: any read that found the post after the 404's read replaces it.
const WRITE_POST = `
INSERT INTO post AS p (id, status, content, scheduled_for, published_at, platforms, account_ids, platform_names,
                       pozy_created_at, pozy_updated_at, last_event_at, synced_at, read_started_at, read_id, deleted_at)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, now(), $12, $13, NULL)
ON CONFLICT (id) DO UPDATE
   SET status = excluded.status, content = excluded.content, scheduled_for = excluded.scheduled_for,
       published_at = excluded.published_at, platforms = excluded.platforms, account_ids = excluded.account_ids,
       platform_names = excluded.platform_names, pozy_created_at = excluded.pozy_created_at,
       pozy_updated_at = excluded.pozy_updated_at, last_event_at = greatest(p.last_event_at, excluded.last_event_at),
       synced_at = now(), read_started_at = excluded.read_started_at, read_id = excluded.read_id, deleted_at = NULL
 WHERE (excluded.pozy_updated_at, excluded.read_started_at)
       > (coalesce(p.pozy_updated_at, '-infinity'::timestamptz), p.read_started_at)
   AND (p.deleted_at IS NULL OR excluded.read_started_at > p.read_started_at)
RETURNING id`;

// A 404 has no Pozy version: it is dated by the read's start, and only a read that started later may replace it.
// It wins a tie with a read that found the post: deleting is the last thing that happens to a post.
const MARK_DELETED = `
INSERT INTO post AS p (id, status, platforms, account_ids, platform_names, last_event_at, synced_at,
                       read_started_at, read_id, deleted_at)
VALUES ($1, 'deleted', '[]'::jsonb, '{}', '{}', $2, now(), $3, $4, now())
ON CONFLICT (id) DO UPDATE
   SET deleted_at = coalesce(p.deleted_at, now()), last_event_at = greatest(p.last_event_at, excluded.last_event_at),
       synced_at = now(), read_started_at = excluded.read_started_at, read_id = excluded.read_id
 WHERE excluded.read_started_at >= p.read_started_at
RETURNING id`;

@Injectable()
export class PostMirrorRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Writes the whole post as Pozy answered it, unless the mirror already holds a newer state. */
  async write(post: PozyPostDto, read: PostRead): Promise<WriteOutcome> {
    const platforms = post.platforms.map((target) => ({
      platform: target.platform,
      accountId: target.accountId,
      status: target.status,
      platformPostId: target.platformPostId ?? null,
      platformPostUrl: target.platformPostUrl ?? null,
      publishedAt: target.publishedAt ?? null,
      errorMessage: target.errorMessage ?? null,
    }));
    const { rowCount } = await this.database.pool.query(WRITE_POST, [
      post._id,
      post.status,
      post.content ?? null,
      post.scheduledFor ?? null,
      post.publishedAt ?? null,
      JSON.stringify(platforms),
      [...new Set(platforms.map((p) => p.accountId))],
      [...new Set(platforms.map((p) => p.platform))],
      post.createdAt,
      post.updatedAt,
      read.lastEventAt,
      read.startedAt,
      read.readId,
    ]);
    return rowCount ? 'written' : 'stale';
  }

  /** Pozy answered 404: the post is marked deleted (kept, not dropped). */
  async markDeleted(postId: string, read: PostRead): Promise<WriteOutcome> {
    const { rowCount } = await this.database.pool.query(MARK_DELETED, [postId, read.lastEventAt, read.startedAt, read.readId]);
    return rowCount ? 'written' : 'stale';
  }
}
