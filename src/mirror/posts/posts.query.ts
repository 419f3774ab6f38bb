import { Injectable } from '@nestjs/common';
import { Expression, ExpressionBuilder, RawBuilder, sql, SqlBool } from 'kysely';
import { parseInstant } from '../../common/instant';
import { DatabaseService, Db } from '../../database/database.service';
import { plannerRows } from '../../database/planner-estimate';
import type { DB } from '../../generated/kysely/database';
import { ListPostsQuery } from './dto/list-posts.query';
import { JsonText, wholeObjectText } from '../whole-object';
import { POST_FIELD_ORDER, profilesOf, wholePost } from './post-fields';
import { storedAnswer } from './post-answer';
import { matchesSearch } from './post-search';
import { decodePostCursor, encodePostCursor, parseSort, PostCursor, PostSort, SORT_COLUMNS } from './post-sort';
import { ALL_WORKSPACES, readsNothing, Workspaces } from '../../common/read-scope';
import { atMostOne } from '../ambiguous-id';
import { GenerateSql, Sample } from '../../database/sql-snapshot';

interface Row {
  workspace_id: string;
  id: string;
  sort_value: Date | null;
  /** The post as the query endpoints answer it: Pozy's fields, then the mirror's (see post-fields.ts). */
  body: JsonText;
}

const DEFAULT_LIMIT = 50;
/** Up to this many matches, a search reads its matches by id rather than walking the order (see narrowSearch). */
const SEARCH_PROBE = 1_000;
/**
 * A search the planner expects to match this share of the posts or more walks the order without probing first. The
 * planner guesses at most 0.5 % for a word outside the most common lexemes ANALYZE keeps, so with up to four
 * alternatives (SEARCH_LIMITS.ors) a search of rare words stays below this; a common word's share is measured.
 */
const COMMON_SEARCH_SHARE = 0.025;
/** How long the planner's estimates are reused (see plannedPosts, isCommonSearch). */
const POST_ESTIMATE_MS = 10_000;
/** Searches whose estimate is kept per Db, the least recently asked forgotten first. */
const SEARCH_ESTIMATES = 1_000;

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class PostsQuery {
  private readonly postEstimates = new WeakMap<Db, { rows: number; at: number }>();
  private readonly searchEstimates = new WeakMap<Db, Map<string, SearchEstimate>>();

  constructor(private readonly database: DatabaseService) {}

  /**
   * Each filter becomes a condition only when it is set, so that every shape of the list is planned with the indexes
   * that serve it. Ordered by id with a status, the page's ids are found first from the index on (status, id,
   * deleted_at, platform_names) alone, in id order without reading the table however rare the combination, and only
   * the page's rows are then read whole. Ordered by a timestamp, the posts that have one come first, walked on the
   * (column, id) index, then those without, walked by id. `db`: the primary's, or the read replica's.
   */
  @GenerateSql({ name: 'by id', params: [{}] })
  @GenerateSql({ name: 'by id, filtered', params: [{ status: 'published', platform: 'instagram', updatedSince: '2026-11-29T00:00:00Z', limit: 10 }] })
  @GenerateSql({ name: 'by time', params: [{ sort: 'scheduledFor:desc', profileId: 'abc' }] })
  @GenerateSql({ name: 'text search', params: [{ q: 'spring sale', hashtag: ['sale'] }] })
  async list(
    query: ListPostsQuery,
    db: Db = this.database.db,
    workspaces: Workspaces = ALL_WORKSPACES,
  ): Promise<{ data: JsonText[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const sort = parseSort(query.sort);
    const cursor = decodePostCursor(query.cursor, sort);
    // A reader none of whose workspaces was asked for reads nothing, never everything.
    if (readsNothing(workspaces)) return { data: [], nextCursor: null };
    const filters = await this.narrowSearch(db, parseFilters(query, workspaces));
    const rows =
      sort.field === 'id'
        ? await this.byId(db, query, filters, sort.desc, cursor, limit + 1)
        : await this.byTime(db, filters, sort, cursor, limit + 1);
    const data = rows.slice(0, limit);
    const last = data[data.length - 1];
    const nextCursor =
      rows.length > limit
        ? encodePostCursor(
            sort,
            sort.field === 'id'
              ? { after: last.id, workspace: last.workspace_id }
              : { after: last.id, workspace: last.workspace_id, value: last.sort_value?.toISOString() ?? null },
          )
        : null;
    return { data: data.map((row) => row.body), nextCursor };
  }

  /**
   * A search (`q`) is planned from PostgreSQL's guess of how common its words are, and for a word outside the most
   * common lexemes ANALYZE keeps, that guess can be a hundred times too high: the planner then walks every post in
   * order recomputing its text to find the few that match (5.5 s on 500,000 posts). A common word's share is known
   * (the statistics keep it): when the planner expects COMMON_SEARCH_SHARE of the posts or more, walking the order
   * finds a page of them within a few thousand posts, and nothing is probed. Otherwise the matches are first counted
   * through the full-text index alone, up to SEARCH_PROBE: when there are fewer, the list reads just those posts by id;
   * when there are more, the word is common enough for the walk.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async narrowSearch(db: Db, filters: Filters): Promise<Filters> {
    if (filters.query.q === undefined) return filters;
    if (await this.isCommonSearch(db, filters)) return filters;
    const ids = await db.connection().execute(async (connection) => {
      // For this statement only: through the indexes' bitmaps, never by walking the table or an order. The
      // transaction and its settings in one round trip (a statement without parameters may hold several).
      let failed = false;
      try {
        await sql`BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off`.execute(connection);
        const rows = await matchingIds(connection, filters)
          .limit(SEARCH_PROBE + 1)
          .execute();
        return [...new Set(rows.map((row) => row.id))];
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        // Read only: nothing to keep, and the settings end with it. A probe's own failure (a statement timeout, which
        // answers 503) is what the caller hears, not the ROLLBACK's.
        await sql`ROLLBACK`.execute(connection).catch((error: unknown) => {
          if (!failed) throw error;
        });
      }
    });
    return ids.length > SEARCH_PROBE ? filters : { ...filters, among: ids };
  }

  /**
   * Whether the planner expects the search to match COMMON_SEARCH_SHARE of the posts or more. Its estimate moves only
   * with the statistics, so each search's (its statement and parameters) is kept POST_ESTIMATE_MS: the next page of a
   * search, and a word many readers look for, plan nothing more.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async isCommonSearch(db: Db, filters: Filters): Promise<boolean> {
    const estimate = matchingIds(db, filters).compile();
    let known = this.searchEstimates.get(db);
    if (known === undefined) this.searchEstimates.set(db, (known = new Map<string, SearchEstimate>()));
    const key = JSON.stringify([estimate.sql, estimate.parameters]);
    const cached = known.get(key);
    if (cached !== undefined && Date.now() - cached.at < POST_ESTIMATE_MS) {
      // Asked again: the most recently asked comes last in the map's order.
      known.delete(key);
      known.set(key, cached);
      return cached.common;
    }
    const [matching] = await plannerRows(db, [estimate]);
    const common = matching >= COMMON_SEARCH_SHARE * (await this.plannedPosts(db));
    known.delete(key);
    known.set(key, { common, at: Date.now() });
    if (known.size > SEARCH_ESTIMATES) known.delete(known.keys().next().value!);
    return common;
  }

  /**
   * The planner's estimate of the posts, for the share a search's words match: the table grows slowly against a few
   * seconds, so each Db's estimate is kept that long rather than asked of PostgreSQL on every search.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async plannedPosts(db: Db): Promise<number> {
    const known = this.postEstimates.get(db);
    if (known !== undefined && Date.now() - known.at < POST_ESTIMATE_MS) return known.rows;
    const [rows] = await plannerRows(db, [db.selectFrom('post').select('post.id').compile()]);
    this.postEstimates.set(db, { rows, at: Date.now() });
    return rows;
  }

  /**
   * The post of this id in the reader's workspaces: `undefined` when none holds it, 409 `ambiguous_id` when more than
   * one does (two workspaces of one Pozy key) and the reader did not pick one.
   */
  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string, fields?: string[], db: Db = this.database.db, workspaces: Workspaces = ALL_WORKSPACES): Promise<JsonText | undefined> {
    if (readsNothing(workspaces)) return undefined;
    const rows = await this.selectRows(
      fields,
      this.from(db)
        .where('post.id', '=', id)
        .where('post.pozy_updated_at', 'is not', null)
        .$if(workspaces !== ALL_WORKSPACES, (qb) => qb.where('post.workspace_id', '=', (eb) => eb.fn.any(eb.val([...workspaces])))),
    )
      .orderBy('post.workspace_id')
      .execute();
    return atMostOne('Post', id, rows)[0]?.body;
  }

  /**
   * The page's keys and each post's answer as JSON text: the whole answer as the row's write stored it (post-answer.ts),
   * only some `fields` built from the columns; `profileIds` then from the mirrored accounts of its targets, a probe per
   * target by key.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private selectRows(
    fields: string[] | undefined,
    query: ReturnType<PostsQuery['from']>,
    sortColumn?: (typeof SORT_COLUMNS)[keyof typeof SORT_COLUMNS],
  ) {
    return query.select([
      'post.workspace_id',
      'post.id',
      sortColumn ? sql<Date | null>`${sql.ref(`post.${sortColumn}`)}`.as('sort_value') : sql<Date | null>`NULL::timestamptz`.as('sort_value'),
      (fields === undefined ? storedAnswer : this.answer(fields)).as('body'),
    ]);
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private answer(fields: readonly string[]): RawBuilder<JsonText> {
    const profileIds = sql`(${profilesOf(this.database.db, sql.ref('post.workspace_id'), sql.ref('post.account_ids'))})`;
    return wholeObjectText(wholePost('post', profileIds), POST_FIELD_ORDER, fields);
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private from(db: Db) {
    return db.selectFrom('post');
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async byId(db: Db, query: ListPostsQuery, filters: Filters, desc: boolean, cursor: PostCursor | null, take: number): Promise<Row[]> {
    const direction = desc ? 'desc' : 'asc';
    const matching = this.from(db)
      .where((eb) => eb.and([...conditions(eb, filters), ...(cursor ? [afterKey(eb, desc ? '<' : '>', cursor)] : [])]))
      .orderBy('post.id', direction)
      .orderBy('post.workspace_id', direction)
      .limit(take);
    if (query.status === undefined) return this.selectRows(query.fields, matching).execute();
    const keys = matching.select(['post.workspace_id', 'post.id']);
    return this.selectRows(query.fields, this.from(db).where(sql<boolean>`(${sql.ref('post.workspace_id')}, ${sql.ref('post.id')}) IN (${keys})`))
      .orderBy('post.id', direction)
      .orderBy('post.workspace_id', direction)
      .execute();
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async byTime(
    db: Db,
    filters: Filters,
    sort: PostSort & { field: keyof typeof SORT_COLUMNS },
    cursor: PostCursor | null,
    take: number,
  ): Promise<Row[]> {
    const column = SORT_COLUMNS[sort.field];
    const direction = sort.desc ? 'desc' : 'asc';
    const beyond = sort.desc ? '<' : '>';
    const rows: Row[] = [];
    // The posts with a value, from the cursor on, unless the walk has already reached those without one.
    if (cursor?.value !== null) {
      const at = cursor === null ? undefined : { value: new Date(cursor.value!), id: cursor.after, workspace: cursor.workspace };
      rows.push(
        ...(await this.selectRows(
          filters.query.fields,
          this.from(db).where((eb) =>
            eb.and([
              ...conditions(eb, filters),
              eb(`post.${column}`, 'is not', null),
              ...(at !== undefined
                ? [
                    at.workspace === undefined
                      ? eb(eb.refTuple(`post.${column}`, 'post.id'), beyond, eb.tuple(at.value, at.id))
                      : eb(eb.refTuple(`post.${column}`, 'post.id', 'post.workspace_id'), beyond, eb.tuple(at.value, at.id, at.workspace)),
                  ]
                : []),
            ]),
          ),
          column,
        )
          .orderBy(`post.${column}`, direction)
          .orderBy('post.id', direction)
          .orderBy('post.workspace_id', direction)
          .limit(take)
          .execute()),
      );
    }
    if (rows.length < take) {
      const after = cursor?.value === null ? cursor : undefined;
      rows.push(
        ...(await this.selectRows(
          filters.query.fields,
          this.from(db).where((eb) =>
            eb.and([...conditions(eb, filters), eb(`post.${column}`, 'is', null), ...(after !== undefined ? [afterKey(eb, beyond, after)] : [])]),
          ),
          column,
        )
          .orderBy('post.id', direction)
          .orderBy('post.workspace_id', direction)
          .limit(take - rows.length)
          .execute()),
      );
    }
    return rows;
  }
}

/** The ids of the posts the filters match: the search's estimate and its probe ask of the same statement. */
function matchingIds(db: Db, filters: Filters) {
  return db
    .selectFrom('post')
    .select('post.id')
    .where((eb) => eb.and(conditions(eb, filters)));
}

/** Whether the planner expects a search to be common (see isCommonSearch), and when it was asked. */
interface SearchEstimate {
  common: boolean;
  at: number;
}

interface Filters {
  query: ListPostsQuery;
  /** The workspaces read: the reader's scope, cut to what it asked for. */
  workspaces: Workspaces;
  /**
   * The ids of every post the search matches (see narrowSearch), when they are few; with the workspace condition,
   * which the search applied too.
   */
  among?: string[];
  dates: Partial<Record<'updatedSince' | 'scheduledFrom' | 'scheduledTo' | 'publishedFrom' | 'publishedTo', Date>>;
}

const DATE_PARAMS = ['updatedSince', 'scheduledFrom', 'scheduledTo', 'publishedFrom', 'publishedTo'] as const;

/** The date filters as instants (the DTO validated them with the same parser). */
function parseFilters(query: ListPostsQuery, workspaces: Workspaces): Filters {
  const dates: Filters['dates'] = {};
  for (const name of DATE_PARAMS) {
    const date = parseInstant(query[name]);
    if (date !== undefined) dates[name] = date;
  }
  return { query, workspaces, dates };
}

/**
 * Past the cursor's post in the order (id, workspace): two workspaces of one Pozy key hold posts of the same id. A
 * cursor handed out before workspaces has none, and ends at its id.
 */
function afterKey(eb: ExpressionBuilder<DB, 'post'>, beyond: '<' | '>', cursor: PostCursor): Expression<SqlBool> {
  if (cursor.workspace === undefined) return eb('post.id', beyond, cursor.after);
  return eb(eb.refTuple('post.id', 'post.workspace_id'), beyond, eb.tuple(cursor.after, cursor.workspace));
}

function conditions(eb: ExpressionBuilder<DB, 'post'>, { query, workspaces, dates, among }: Filters): Array<Expression<SqlBool>> {
  const where: Array<Expression<SqlBool>> = [];
  if (workspaces !== ALL_WORKSPACES) where.push(eb('post.workspace_id', '=', eb.fn.any(eb.val([...workspaces]))));
  // `deleted` is not a Pozy status: it asks for the posts Pozy answers 404 for.
  const deletedOnly = query.status === 'deleted';
  const withDeleted = deletedOnly || query.includeDeleted === true;
  const pairs = filterPairs(query.status !== undefined && !deletedOnly ? query.status : undefined, query);
  if (pairs.length > 0) where.push(sql<SqlBool>`${POST_FILTER_PAIRS} @> ARRAY[${sql.join(pairs)}]`);
  else {
    if (query.status !== undefined && !deletedOnly) where.push(eb('post.status', '=', query.status));
    if (query.platform !== undefined) where.push(eb('post.platform_names', '@>', eb.val([query.platform])));
    if (query.accountId !== undefined) where.push(eb('post.account_ids', '@>', eb.val([query.accountId])));
  }
  if (query.profileId !== undefined) {
    // Any of the profile's accounts: the GIN index on account_ids finds them.
    const accounts = eb.selectFrom('account').select('account.id').where('account.profile_id', '=', query.profileId);
    where.push(eb('post.account_ids', '&&', sql<string[]>`ARRAY(${accounts})`));
  }
  if (dates.updatedSince !== undefined) {
    // Changed in Pozy, or deleted, since then. A post not deleted can only have changed: the index on
    // pozy_updated_at answers that alone.
    const changed = eb('post.pozy_updated_at', '>=', dates.updatedSince);
    where.push(withDeleted ? eb.or([changed, eb('post.deleted_at', '>=', dates.updatedSince)]) : changed);
  }
  if (among !== undefined) where.push(eb('post.id', '=', eb.fn.any(eb.val(among))));
  else if (query.q !== undefined) where.push(matchesSearch(query.q));
  // Any of the given ones: the GIN indexes on the arrays answer `&&`.
  if (query.tag !== undefined) where.push(eb('post.tags', '&&', eb.val(query.tag)));
  if (query.hashtag !== undefined) where.push(eb('post.hashtags', '&&', eb.val(query.hashtag)));
  if (query.errorCategory !== undefined && pairs.length === 0) where.push(eb('post.error_categories', '@>', eb.val([query.errorCategory])));
  if (query.visibility !== undefined) where.push(eb('post.visibility', '=', query.visibility));
  if (query.hasMedia !== undefined) where.push(eb('post.has_media', '=', query.hasMedia));
  if (dates.scheduledFrom !== undefined) where.push(eb('post.scheduled_for', '>=', dates.scheduledFrom));
  if (dates.scheduledTo !== undefined) where.push(eb('post.scheduled_for', '<=', dates.scheduledTo));
  if (dates.publishedFrom !== undefined) where.push(eb('post.published_at', '>=', dates.publishedFrom));
  if (dates.publishedTo !== undefined) where.push(eb('post.published_at', '<=', dates.publishedTo));
  if (deletedOnly) where.push(eb('post.deleted_at', 'is not', null));
  else if (!withDeleted) where.push(eb('post.deleted_at', 'is', null));
  // A tombstone (a 404 for a post the mirror never held: no Pozy version) is never answered; live posts always have one.
  if (withDeleted) where.push(eb('post.pozy_updated_at', 'is not', null));
  return where;
}

/**
 * The expression of the index post_filter_pairs_idx (migration 20261205120000_post_filter_pairs), character for
 * character: each pair of the post's values among status, platforms, accounts and error categories as one key.
 */
const POST_FILTER_PAIRS = sql`post_filter_pairs(${sql.ref('post.status')}, ${sql.ref('post.platform_names')}, ${sql.ref('post.account_ids')}, ${sql.ref('post.error_categories')})`;

/** The dimensions of the pair keys, in the order of their kinds' letters (sp, sa, se, pa, pe, ae). */
const PAIR_DIMENSIONS = ['s', 'p', 'a', 'e'] as const;

/**
 * Two or more of status, platform, accountId and errorCategory, as pair keys that together hold exactly when each
 * holds (consecutive pairs cover every filter): one lookup in post_filter_pairs_idx, estimated from its own
 * statistics, instead of one condition per filter, which the planner would take for independent. Fewer: none.
 */
function filterPairs(status: string | undefined, query: ListPostsQuery) {
  const values = { s: status, p: query.platform, a: query.accountId, e: query.errorCategory };
  const set = PAIR_DIMENSIONS.filter((dimension) => values[dimension] !== undefined);
  if (set.length < 2) return [];
  const pairs: Array<[(typeof PAIR_DIMENSIONS)[number], (typeof PAIR_DIMENSIONS)[number]]> = [];
  for (let i = 0; i + 1 < set.length; i += 2) pairs.push([set[i], set[i + 1]]);
  if (set.length % 2 === 1) pairs.push([set[set.length - 2], set[set.length - 1]]);
  return pairs.map(([first, second]) => sql<string>`post_filter_key(${first + second}, ${values[first]!}, ${values[second]!})`);
}
