import { Injectable } from '@nestjs/common';
import { Expression, ExpressionBuilder, RawBuilder, SelectQueryBuilder, sql, SqlBool } from 'kysely';
import { parseInstant } from '../../common/instant';
import { DatabaseService, Db } from '../../database/database.service';
import { plannerRows } from '../../database/planner-estimate';
import type { DB } from '../../generated/kysely/database';
import { ListPostsQuery } from './dto/list-posts.query';
import { JsonText, wholeObjectText } from '../whole-object';
import { POST_FIELD_ORDER, profilesOf, wholePost } from './post-fields';
import { storedAnswer } from './post-answer';
import { matchesSearch } from './post-search';
import { tokenConditionCount, tokenConditions, TokenFilter, tokenFilter } from './post-filter-tokens';
import { decodePostCursor, encodePostCursor, parseSort, PostCursor, SORT_COLUMNS } from './post-sort';
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
/**
 * A list that filters on one condition whose share of the posts the planner puts at this or more walks the order
 * (with a budget: see walk); below it, or with several conditions, the matches are counted first (see readPart).
 */
const COMMON_SHARE = 0.02;
/** The fewest and the most matches counted through the indexes before the walk is chosen instead (see probeSize). */
const PROBE_BOUNDS = { min: 500, max: 20_000 } as const;
/** A walk reads at most this many times the posts it expects to read for a page (see walkBudget), within these bounds. */
const WALK_SLACK = 4;
const WALK_BOUNDS = { min: 200, max: 100_000 } as const;
/** How long the planner's estimates are reused (see plannedPosts, estimatedShare). */
const POST_ESTIMATE_MS = 10_000;
/** Estimates kept per Db, the least recently asked forgotten first. */
const ESTIMATES = 1_000;

/** What EXPLAIN (FORMAT JSON) answers for a plan of `rows` rows: the SQL snapshots' samples. */
const plan = (rows: number) => [{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': rows } }] }];

/** One stretch of a list's order: the whole order by id, or the posts with a timestamp, then those without. */
interface Part {
  /** The stretch (whether the sort column is set), and where the cursor left it. */
  where: (eb: ExpressionBuilder<DB, 'post'>) => Array<Expression<SqlBool>>;
  beyond: (eb: ExpressionBuilder<DB, 'post'>) => Array<Expression<SqlBool>>;
  /** The columns of the order, first to last, and the direction. */
  order: Array<'post.id' | 'post.workspace_id' | `post.${(typeof SORT_COLUMNS)[keyof typeof SORT_COLUMNS]}`>;
  direction: 'asc' | 'desc';
  sortColumn?: (typeof SORT_COLUMNS)[keyof typeof SORT_COLUMNS];
  take: number;
}

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class PostsQuery {
  private readonly postEstimates = new WeakMap<Db, { rows: number; at: number }>();
  private readonly estimates = new WeakMap<Db, Map<string, { rows: number; at: number }>>();

  constructor(private readonly database: DatabaseService) {}

  /**
   * Any combination of filters, with any order, reads work in proportion to the page and the matches it skips, never to
   * the table. A list without filters walks the order's index. With filters, each stretch of the order (see Part) is
   * read one of two ways: the matches, found through the indexes of their conditions (the tokens of every equality
   * filter in one GIN index, the words of `q`, the dates' ranges) and sorted in memory when they are few; or the
   * order's index walked with the filters checked post by post when they are many. Which, from the planner's estimate
   * (a token's frequency is in the index's statistics): when it expects COMMON_SHARE of the posts or more, a walk,
   * with a budget of a few times the posts it expects to read; otherwise the matches are counted through the indexes
   * up to probeSize first. Both guard against the estimate: several conditions are estimated as if independent, so two
   * that exclude each other look common (the walk reads its budget without filling the page, and the matches, none,
   * are read instead) and two that go together look rare (the count passes probeSize, and the order is walked). Each
   * read is bounded by the budget or the probe, about √(page × posts). `db`: the primary's, or the read replica's.
   */
  @GenerateSql({ name: 'by id', params: [{}] })
  @GenerateSql({
    name: 'by id, filtered: few match, read and sorted',
    params: [{ status: 'published', platform: 'instagram', updatedSince: '2026-11-29T00:00:00Z', limit: 10 }],
    answers: [plan(100_000), plan(100), [], [{ workspace_id: 'default', id: 'p1', matched: '1' }], [], []],
  })
  @GenerateSql({
    name: 'by time, filtered: many match, walked',
    params: [{ sort: 'scheduledFor:desc', profileId: 'abc' }],
    answers: [plan(100_000), plan(50_000), [], plan(50_000), []],
  })
  @GenerateSql({
    name: 'text search: more match than counted, walked',
    params: [{ q: 'spring sale', hashtag: ['sale'] }],
    answers: [plan(100_000), plan(10), [], [{ workspace_id: 'default', id: 'p1', matched: '100000' }], [], []],
  })
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
    const filters = parseFilters(query, workspaces);
    const direction = sort.desc ? 'desc' : 'asc';
    const beyond = sort.desc ? '<' : '>';
    const take = limit + 1;
    const rows: Row[] = [];
    if (sort.field === 'id') {
      rows.push(
        ...(await this.readPart(db, filters, {
          where: () => [],
          beyond: (eb) => (cursor ? [afterKey(eb, beyond, cursor)] : []),
          order: ['post.id', 'post.workspace_id'],
          direction,
          take,
        })),
      );
    } else {
      const column = SORT_COLUMNS[sort.field];
      // The posts with a value, from the cursor on, unless the walk has already reached those without one.
      if (cursor?.value !== null) {
        const at = cursor === null ? undefined : { value: new Date(cursor.value!), id: cursor.after, workspace: cursor.workspace };
        rows.push(
          ...(await this.readPart(db, filters, {
            where: (eb) => [eb(`post.${column}`, 'is not', null)],
            beyond: (eb) =>
              at === undefined
                ? []
                : [
                    at.workspace === undefined
                      ? eb(eb.refTuple(`post.${column}`, 'post.id'), beyond, eb.tuple(at.value, at.id))
                      : eb(eb.refTuple(`post.${column}`, 'post.id', 'post.workspace_id'), beyond, eb.tuple(at.value, at.id, at.workspace)),
                  ],
            order: [`post.${column}`, 'post.id', 'post.workspace_id'],
            direction,
            sortColumn: column,
            take,
          })),
        );
      }
      if (rows.length < take) {
        const after = cursor?.value === null ? cursor : undefined;
        rows.push(
          ...(await this.readPart(db, filters, {
            where: (eb) => [eb(`post.${column}`, 'is', null)],
            beyond: (eb) => (after !== undefined ? [afterKey(eb, beyond, after)] : []),
            order: ['post.id', 'post.workspace_id'],
            direction,
            sortColumn: column,
            take: take - rows.length,
          })),
        );
      }
    }
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

  /** One stretch of the order (see list): walked, or its matches read and sorted, whichever reads fewer posts. */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async readPart(db: Db, filters: Filters, part: Part): Promise<Row[]> {
    if (!narrows(filters)) return (await this.walk(db, filters, part))!;
    const posts = Math.max(await this.plannedPosts(db), 1);
    const probe = probeSize(part.take, posts);
    const share = (await this.estimatedRows(db, filters, part)) / posts;
    if (share >= COMMON_SHARE) {
      // A walk as long as the count it spares at most: the estimate may be of conditions that exclude each other.
      const budget = Math.min(walkBudget(part.take, share), probe);
      return (await this.walk(db, filters, part, budget)) ?? (await this.matches(db, filters, part))!;
    }
    return (
      (await this.matches(db, filters, part, probe)) ??
      (await this.walk(db, filters, part, walkBudget(part.take, probe / posts))) ??
      (await this.matches(db, filters, part))!
    );
  }

  /**
   * The stretch's posts in order, the filters checked on each, through the order's index. With a `budget`, at most that
   * many posts are read: undefined when they were read without filling the page (the caller reads the matches
   * instead). The walk's posts are numbered (`row_number`, computed as they come), and the budget's last one is
   * answered whether it matches or not, so that its arrival tells an exhausted budget from the end of the order.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async walk(db: Db, filters: Filters, part: Part, budget?: number): Promise<Row[] | undefined> {
    if (budget === undefined) {
      return this.ordered(
        this.selectRows(
          filters.query.fields,
          this.from(db).where((eb) => eb.and([...conditions(eb, filters), ...part.where(eb), ...part.beyond(eb)])),
          part.sortColumn,
        ),
        part,
      )
        .limit(part.take)
        .execute();
    }
    const walked = this.ordered(
      db
        .selectFrom('post')
        .selectAll('post')
        .select(
          sql<string>`row_number() OVER (ORDER BY ${sql.join(part.order.map((column) => sql`${sql.ref(column)} ${sql.raw(part.direction)}`))})`.as(
            'walked',
          ),
        )
        .where((eb) => eb.and([...scope(eb, filters), ...part.where(eb), ...part.beyond(eb)])),
      part,
    ).limit(budget);
    // The walk's rows stand for the post table (selectAll: the same columns), so the filters and the answer apply as
    // they do to it.
    const over = db.selectFrom(walked.as('post')) as unknown as ReturnType<PostsQuery['from']>;
    const rows = await this.ordered(
      this.selectRows(filters.query.fields, over, part.sortColumn)
        .select((eb) => [sql<boolean>`${eb.and(conditions(eb, filters))}`.as('hit'), sql<string>`${sql.ref('post.walked')}`.as('walked')])
        .where((eb) => eb.or([eb.and(conditions(eb, filters)), eb(sql.ref('post.walked'), '=', String(budget))])),
      part,
    )
      .limit(part.take + 1)
      .execute();
    const hits = rows.filter((row) => row.hit);
    if (hits.length < part.take && rows.some((row) => Number(row.walked) === budget)) return undefined;
    return hits.slice(0, part.take).map(({ hit: _hit, walked: _walked, ...row }) => row);
  }

  /**
   * The stretch's matches, found through the indexes of their conditions alone (never by walking an order or the
   * table), then sorted, and the page's posts read by their keys. With a `probe`, at most that many are read:
   * undefined when there are more.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async matches(db: Db, filters: Filters, part: Part, probe?: number): Promise<Row[] | undefined> {
    const keys = await db.connection().execute(async (connection) => {
      // For this statement only: through the indexes' bitmaps. The transaction and its settings in one round trip (a
      // statement without parameters may hold several).
      let failed = false;
      try {
        await sql`BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off`.execute(connection);
        // The matches, up to the probe (or all: OFFSET 0 keeps the cursor's condition out of their scan, where the planner
        // would read the order's index from the cursor on as one more bitmap), counted, then the page past the cursor.
        // When the probe was cut short, any row answers, to say so.
        const matched = connection
          .selectFrom('post')
          .select(['post.workspace_id', 'post.id', ...(part.sortColumn ? [`post.${part.sortColumn}` as const] : [])])
          .where((eb) => eb.and([...tokenConditions(eb, filters.tokens), ...otherConditions(eb, filters), ...part.where(eb)]))
          .$if(probe !== undefined, (qb) => qb.limit(probe! + 1))
          .$if(probe === undefined, (qb) => qb.offset(0));
        const counted = connection
          .selectFrom(matched.as('post'))
          .selectAll('post')
          .select(sql<string>`count(*) OVER ()`.as('matched'));
        // The counted rows stand for the post table (its columns, by its name), so the cursor and the order apply as to it.
        const over = connection.selectFrom(counted.as('post')) as unknown as ReturnType<PostsQuery['from']>;
        const matchedRef = sql.ref<string>('post.matched');
        const page = over.select(['post.workspace_id', 'post.id', sql<string>`${matchedRef}`.as('matched')]).where((eb) => {
          const after = part.beyond(eb);
          const cutShort = probe !== undefined ? [eb(matchedRef, '>', String(probe))] : [];
          return after.length === 0 ? eb.and([]) : eb.or([eb.and(after), ...cutShort]);
        });
        return this.ordered(page, part).limit(part.take).execute();
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        // Read only: nothing to keep, and the settings end with it. A statement's own failure (a statement timeout,
        // which answers 503) is what the caller hears, not the ROLLBACK's.
        await sql`ROLLBACK`.execute(connection).catch((error: unknown) => {
          if (!failed) throw error;
        });
      }
    });
    if (probe !== undefined && keys.length > 0 && Number(keys[0].matched) > probe) return undefined;
    if (keys.length === 0) return [];
    const rows = await this.selectRows(
      filters.query.fields,
      this.from(db).where(
        sql<SqlBool>`(${sql.ref('post.workspace_id')}, ${sql.ref('post.id')}) IN (SELECT * FROM unnest(${sql.val(keys.map((key) => key.workspace_id))}::text[], ${sql.val(keys.map((key) => key.id))}::text[]))`,
      ),
      part.sortColumn,
    ).execute();
    const at = new Map(keys.map((key, index) => [`${key.workspace_id}\u0000${key.id}`, index]));
    return rows.sort((a, b) => at.get(`${a.workspace_id}\u0000${a.id}`)! - at.get(`${b.workspace_id}\u0000${b.id}`)!);
  }

  /** The query in the stretch's order. */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private ordered<O>(query: SelectQueryBuilder<DB, 'post', O>, part: Part): SelectQueryBuilder<DB, 'post', O> {
    let ordered = query;
    for (const column of part.order) ordered = ordered.orderBy(column, part.direction);
    return ordered;
  }

  /**
   * The planner's estimate of the stretch's matches from the start (the cursor aside), through the conditions on the
   * tokens: kept POST_ESTIMATE_MS per statement and parameters, so the next page, and a filter many readers ask for,
   * plan nothing more. Its estimate moves only with the statistics.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async estimatedRows(db: Db, filters: Filters, part: Part): Promise<number> {
    const statement = db
      .selectFrom('post')
      .select('post.id')
      .where((eb) => eb.and([...tokenConditions(eb, filters.tokens), ...otherConditions(eb, filters), ...part.where(eb)]))
      .compile();
    let known = this.estimates.get(db);
    if (known === undefined) this.estimates.set(db, (known = new Map<string, { rows: number; at: number }>()));
    const key = JSON.stringify([statement.sql, statement.parameters]);
    const cached = known.get(key);
    if (cached !== undefined && Date.now() - cached.at < POST_ESTIMATE_MS) {
      // Asked again: the most recently asked comes last in the map's order.
      known.delete(key);
      known.set(key, cached);
      return cached.rows;
    }
    const [rows] = await plannerRows(db, [statement]);
    known.delete(key);
    known.set(key, { rows, at: Date.now() });
    if (known.size > ESTIMATES) known.delete(known.keys().next().value!);
    return rows;
  }

  /**
   * The planner's estimate of the posts, for a condition's share and the probe's size: the table grows slowly against a
   * few seconds, so each Db's estimate is kept that long rather than asked of PostgreSQL on every list.
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
}

/**
 * Matches counted before a walk is chosen: where reading the matches (one post each) and walking the order (the page
 * over the matches' share, `take × posts / matches`) cost the same, √(take × posts), within PROBE_BOUNDS.
 */
const probeSize = (take: number, posts: number) => Math.min(PROBE_BOUNDS.max, Math.max(PROBE_BOUNDS.min, Math.round(Math.sqrt(take * posts))));

/** The posts a walk may read: WALK_SLACK times the page over the matches' share, within WALK_BOUNDS. */
const walkBudget = (take: number, share: number) =>
  Math.min(WALK_BOUNDS.max, Math.max(WALK_BOUNDS.min, Math.ceil((WALK_SLACK * take) / Math.max(share, 1e-9))));

interface Filters {
  query: ListPostsQuery;
  /** The workspaces read: the reader's scope, cut to what it asked for. */
  workspaces: Workspaces;
  /** The equality filters (and the scope) as tokens of post_filter_tokens_idx. */
  tokens: TokenFilter;
  dates: Partial<Record<'updatedSince' | 'scheduledFrom' | 'scheduledTo' | 'publishedFrom' | 'publishedTo', Date>>;
}

const DATE_PARAMS = ['updatedSince', 'scheduledFrom', 'scheduledTo', 'publishedFrom', 'publishedTo'] as const;

/** The date filters as instants (the DTO validated them with the same parser), the equality filters as tokens. */
function parseFilters(query: ListPostsQuery, workspaces: Workspaces): Filters {
  const dates: Filters['dates'] = {};
  for (const name of DATE_PARAMS) {
    const date = parseInstant(query[name]);
    if (date !== undefined) dates[name] = date;
  }
  return { query, workspaces, tokens: tokenFilter(query, workspaces), dates };
}

/** Whether an index can narrow the list (a token, the search's words, a date range); if not, its order is walked. */
const narrows = ({ query, tokens, dates }: Filters) => tokenConditionCount(tokens) > 0 || query.q !== undefined || Object.keys(dates).length > 0;

/**
 * Past the cursor's post in the order (id, workspace): two workspaces of one Pozy key hold posts of the same id. A
 * cursor handed out before workspaces has none, and ends at its id.
 */
function afterKey(eb: ExpressionBuilder<DB, 'post'>, beyond: '<' | '>', cursor: PostCursor): Expression<SqlBool> {
  if (cursor.workspace === undefined) return eb('post.id', beyond, cursor.after);
  return eb(eb.refTuple('post.id', 'post.workspace_id'), beyond, eb.tuple(cursor.after, cursor.workspace));
}

/** The reader's workspaces, on the column. */
function scope(eb: ExpressionBuilder<DB, 'post'>, { workspaces }: Filters): Array<Expression<SqlBool>> {
  return workspaces === ALL_WORKSPACES ? [] : [eb('post.workspace_id', '=', eb.fn.any(eb.val([...workspaces])))];
}

/**
 * Every filter on the post's own columns, as a walk checks them post by post (cheaper there than recomputing the
 * tokens of each).
 */
function conditions(eb: ExpressionBuilder<DB, 'post'>, filters: Filters): Array<Expression<SqlBool>> {
  const { query } = filters;
  const where = scope(eb, filters);
  if (query.status !== undefined && query.status !== 'deleted') where.push(eb('post.status', '=', query.status));
  if (query.platform !== undefined) where.push(eb('post.platform_names', '@>', eb.val([query.platform])));
  if (query.accountId !== undefined) where.push(eb('post.account_ids', '@>', eb.val([query.accountId])));
  if (query.profileId !== undefined) {
    const accounts = eb.selectFrom('account').select('account.id').where('account.profile_id', '=', query.profileId);
    where.push(eb('post.account_ids', '&&', sql<string[]>`ARRAY(${accounts})`));
  }
  // Any of the given ones.
  if (query.tag !== undefined) where.push(eb('post.tags', '&&', eb.val(query.tag)));
  if (query.hashtag !== undefined) where.push(eb('post.hashtags', '&&', eb.val(query.hashtag)));
  if (query.errorCategory !== undefined) where.push(eb('post.error_categories', '@>', eb.val([query.errorCategory])));
  if (query.visibility !== undefined) where.push(eb('post.visibility', '=', query.visibility));
  if (query.hasMedia !== undefined) where.push(eb('post.has_media', '=', query.hasMedia));
  return [...where, ...otherConditions(eb, filters)];
}

/** The filters the tokens do not hold: the search, the dates, and whether deleted posts are read. */
function otherConditions(eb: ExpressionBuilder<DB, 'post'>, { query, dates }: Filters): Array<Expression<SqlBool>> {
  const where: Array<Expression<SqlBool>> = [];
  // `deleted` is not a Pozy status: it asks for the posts Pozy answers 404 for.
  const deletedOnly = query.status === 'deleted';
  const withDeleted = deletedOnly || query.includeDeleted === true;
  if (dates.updatedSince !== undefined) {
    // Changed in Pozy, or deleted, since then. A post not deleted can only have changed: the index on
    // pozy_updated_at answers that alone.
    const changed = eb('post.pozy_updated_at', '>=', dates.updatedSince);
    where.push(withDeleted ? eb.or([changed, eb('post.deleted_at', '>=', dates.updatedSince)]) : changed);
  }
  if (query.q !== undefined) where.push(matchesSearch(query.q));
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
