import { Injectable } from '@nestjs/common';
import { Expression, ExpressionBuilder, Selectable, sql, SqlBool } from 'kysely';
import { DatabaseService } from '../../database/database.service';
import type { DB } from '../../generated/kysely/database';
import { decodeCursor, page } from '../cursor';
import { ListPostsQuery } from './dto/list-posts.query';

/** The columns a post is answered from: the mirrored state, bookkeeping of the reads aside, and its accounts. */
const POST_COLUMNS = [
  'id',
  'status',
  'content',
  'scheduled_for',
  'published_at',
  'platforms',
  'account_ids',
  'pozy_created_at',
  'pozy_updated_at',
  'last_event_at',
  'synced_at',
  'deleted_at',
] as const;

type PostRow = Pick<Selectable<DB['post']>, (typeof POST_COLUMNS)[number]>;

/** A post as the query endpoints answer it, with the profiles of its mirrored accounts. */
function answer(post: PostRow, profileIds: string[]) {
  return {
    id: post.id,
    status: post.status,
    content: post.content,
    scheduledFor: post.scheduled_for,
    publishedAt: post.published_at,
    platforms: post.platforms,
    profileIds,
    pozyCreatedAt: post.pozy_created_at,
    pozyUpdatedAt: post.pozy_updated_at,
    lastEventAt: post.last_event_at,
    syncedAt: post.synced_at,
    deletedAt: post.deleted_at,
  };
}

/** A mirrored post as the query endpoints answer it. */
export type MirroredPost = ReturnType<typeof answer>;

const DEFAULT_LIMIT = 50;

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class PostsQuery {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Each filter becomes a condition only when it is set, so that every shape of the list is planned with the indexes
   * that serve it. With a status, the page's ids are found first from the index on (status, id, deleted_at,
   * platform_names) alone, in id order without reading the table however rare the combination, and only the page's
   * rows are then read whole.
   */
  async list(query: ListPostsQuery): Promise<{ data: MirroredPost[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor);
    const db = this.database.db;
    const matching = db
      .selectFrom('post')
      .where((eb) => eb.and(conditions(eb, query, after)))
      .orderBy('post.id')
      .limit(limit + 1);
    const rows =
      query.status === undefined
        ? await matching.select(POST_COLUMNS).execute()
        : await db.selectFrom('post').select(POST_COLUMNS).where('post.id', 'in', matching.select('post.id')).orderBy('post.id').execute();
    return page(await this.withProfiles(rows), limit);
  }

  async get(id: string): Promise<MirroredPost | undefined> {
    const rows = await this.database.db.selectFrom('post').select(POST_COLUMNS).where('post.id', '=', id).execute();
    return (await this.withProfiles(rows))[0];
  }

  /**
   * profileIds come from the mirrored accounts of the post's targets (Pozy's post has no profile field): each post's
   * distinct profiles, in the order PostgreSQL sorts them. One lookup for the whole page: a subquery per post cost
   * more than the rest of the page.
   */
  private async withProfiles(rows: PostRow[]): Promise<MirroredPost[]> {
    const accountIds = [...new Set(rows.flatMap((row) => row.account_ids))];
    const accounts =
      accountIds.length === 0
        ? []
        : await this.database.db
            .selectFrom('account')
            .select(['account.id', 'account.profile_id'])
            .where((eb) => eb('account.id', '=', eb.fn.any(eb.val(accountIds))))
            .orderBy('account.profile_id')
            .execute();
    return rows.map((row) => {
      const targets = new Set(row.account_ids);
      return answer(row, [...new Set(accounts.filter((account) => targets.has(account.id)).map((account) => account.profile_id))]);
    });
  }
}

function conditions(eb: ExpressionBuilder<DB, 'post'>, query: ListPostsQuery, after: string | null): Array<Expression<SqlBool>> {
  const where: Array<Expression<SqlBool>> = [];
  // `deleted` is not a Pozy status: it asks for the posts Pozy answers 404 for.
  const deletedOnly = query.status === 'deleted';
  const withDeleted = deletedOnly || query.includeDeleted === true;
  if (query.status !== undefined && !deletedOnly) where.push(eb('post.status', '=', query.status));
  if (query.platform !== undefined) where.push(eb('post.platform_names', '@>', eb.val([query.platform])));
  if (query.accountId !== undefined) where.push(eb('post.account_ids', '@>', eb.val([query.accountId])));
  if (query.profileId !== undefined) {
    // Any of the profile's accounts: the GIN index on account_ids finds them.
    const accounts = eb.selectFrom('account').select('account.id').where('account.profile_id', '=', query.profileId);
    where.push(eb('post.account_ids', '&&', sql<string[]>`ARRAY(${accounts})`));
  }
  if (query.updatedSince !== undefined) {
    // Changed in Pozy, or deleted, since then. A post not deleted can only have changed: the index on
    // pozy_updated_at answers that alone.
    // Parsed by PostgreSQL, as a timestamptz, in the session's time zone.
    const since = eb.cast<Date>(eb.val(query.updatedSince), 'timestamptz');
    const changed = eb('post.pozy_updated_at', '>=', since);
    where.push(withDeleted ? eb.or([changed, eb('post.deleted_at', '>=', since)]) : changed);
  }
  if (deletedOnly) where.push(eb('post.deleted_at', 'is not', null));
  else if (!withDeleted) where.push(eb('post.deleted_at', 'is', null));
  if (after !== null) where.push(eb('post.id', '>', after));
  return where;
}
