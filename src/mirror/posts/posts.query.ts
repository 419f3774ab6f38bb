import { Injectable } from '@nestjs/common';
import { Expression, ExpressionBuilder, sql, SqlBool } from 'kysely';
import { DatabaseService, Db } from '../../database/database.service';
import type { DB } from '../../generated/kysely/database';
import { decodeCursor, page } from '../cursor';
import { ListPostsQuery } from './dto/list-posts.query';

/** A post as the query endpoints answer it: the mirrored state, bookkeeping of the reads aside. */
const answered = (db: Db) =>
  db.selectFrom('post as p').select((eb) => [
    'p.id',
    'p.status',
    'p.content',
    'p.scheduled_for as scheduledFor',
    'p.published_at as publishedAt',
    'p.platforms',
    // profileIds come from the mirrored accounts of the post's targets (Pozy's post has no profile field).
    sql<string[]>`ARRAY(${eb
      .selectFrom('account as a')
      .select('a.profile_id')
      .distinct()
      .where('a.id', '=', eb.fn.any('p.account_ids'))
      .orderBy('a.profile_id')})`.as('profileIds'),
    'p.pozy_created_at as pozyCreatedAt',
    'p.pozy_updated_at as pozyUpdatedAt',
    'p.last_event_at as lastEventAt',
    'p.synced_at as syncedAt',
    'p.deleted_at as deletedAt',
  ]);

/** A mirrored post as the query endpoints answer it. */
export type MirroredPost = Awaited<ReturnType<ReturnType<typeof answered>['executeTakeFirstOrThrow']>>;

const DEFAULT_LIMIT = 50;

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class PostsQuery {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Each filter becomes a condition only when it is set, so that every shape of the list is planned with the indexes
   * that serve it. The page's ids are found first, from the post table's columns alone: with a status, the index on
   * (status, id, deleted_at, platform_names) answers them in id order without reading the table, however rare the
   * combination. Only the page's rows are then read whole.
   */
  async list(query: ListPostsQuery): Promise<{ data: MirroredPost[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor);
    const db = this.database.db;
    const pageIds = db
      .selectFrom('post')
      .select('post.id')
      .where((eb) => eb.and(conditions(eb, query, after)))
      .orderBy('post.id')
      .limit(limit + 1);
    const rows = await answered(db).where('p.id', 'in', pageIds).orderBy('p.id').execute();
    return page(rows, limit);
  }

  get(id: string): Promise<MirroredPost | undefined> {
    return answered(this.database.db).where('p.id', '=', id).executeTakeFirst();
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
