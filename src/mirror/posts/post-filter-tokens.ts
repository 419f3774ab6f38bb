import { Expression, ExpressionBuilder, sql, SqlBool } from 'kysely';
import { ALL_WORKSPACES, Workspaces } from '../../common/read-scope';
import type { DB } from '../../generated/kysely/database';
import type { ListPostsQuery } from './dto/list-posts.query';

/**
 * Every value of a post that GET /posts filters on by equality, as one token each (`s:draft`, `p:x`, `h:#brand`, …),
 * in one GIN-indexed array: any combination of those filters is one lookup in one index, post_filter_tokens_idx
 * (migrations 20261213100000_post_filter_tokens and _index), rather than an index per filter or per pair of filters.
 * The letters are the function's: w workspace, s status, p platform, a account, e error category, t tag, h hashtag,
 * v visibility, m has media, x:deleted.
 */

/** The index's expression, character for character (the planner matches a condition to the index by it). */
export const POST_FILTER_TOKENS = sql<string[]>`post_filter_tokens(${sql.join([
  sql.ref('post.workspace_id'),
  sql.ref('post.status'),
  sql.ref('post.platform_names'),
  sql.ref('post.account_ids'),
  sql.ref('post.error_categories'),
  sql.ref('post.tags'),
  sql.ref('post.hashtags'),
  sql.ref('post.visibility'),
  sql.ref('post.has_media'),
  sql`${sql.ref('post.deleted_at')} IS NOT NULL`,
])})`;

/** What a list asks of the tokens: all of `all`, and at least one of each of `anyOf`. */
export interface TokenFilter {
  all: string[];
  anyOf: string[][];
  /** A profile's posts: any of its accounts' tokens, looked up when the statement runs. */
  profileId?: string;
}

/** The tokens a list's equality filters ask for; `deleted` (a status the mirror adds) is `x:deleted`. */
export function tokenFilter(query: ListPostsQuery, workspaces: Workspaces): TokenFilter {
  const all: string[] = [];
  const anyOf: string[][] = [];
  if (workspaces !== ALL_WORKSPACES) {
    const names = [...workspaces].map((workspace) => `w:${workspace}`);
    if (names.length === 1) all.push(names[0]);
    else anyOf.push(names);
  }
  if (query.status === 'deleted') all.push('x:deleted');
  else if (query.status !== undefined) all.push(`s:${query.status}`);
  if (query.platform !== undefined) all.push(`p:${query.platform}`);
  if (query.accountId !== undefined) all.push(`a:${query.accountId}`);
  if (query.errorCategory !== undefined) all.push(`e:${query.errorCategory}`);
  if (query.visibility !== undefined) all.push(`v:${query.visibility}`);
  if (query.hasMedia !== undefined) all.push(`m:${String(query.hasMedia)}`);
  if (query.tag !== undefined) anyOf.push(query.tag.map((tag) => `t:${tag}`));
  if (query.hashtag !== undefined) anyOf.push(query.hashtag.map((hashtag) => `h:${hashtag}`));
  return { all, anyOf, ...(query.profileId !== undefined ? { profileId: query.profileId } : {}) };
}

/** How many conditions the tokens hold: each token of `all`, each group of `anyOf`, the profile. */
export const tokenConditionCount = (filter: TokenFilter) => filter.all.length + filter.anyOf.length + (filter.profileId !== undefined ? 1 : 0);

/** The conditions on the tokens, each answered by post_filter_tokens_idx (`@>` and `&&` of text arrays). */
export function tokenConditions(eb: ExpressionBuilder<DB, 'post'>, filter: TokenFilter): Array<Expression<SqlBool>> {
  const where: Array<Expression<SqlBool>> = [];
  if (filter.all.length > 0) where.push(sql<SqlBool>`${POST_FILTER_TOKENS} @> ${sql.val(filter.all)}::text[]`);
  for (const group of filter.anyOf) where.push(sql<SqlBool>`${POST_FILTER_TOKENS} && ${sql.val(group)}::text[]`);
  if (filter.profileId !== undefined) {
    const accounts = eb
      .selectFrom('account')
      .select(sql<string>`'a:' || ${sql.ref('account.id')}`.as('token'))
      .where('account.profile_id', '=', filter.profileId);
    where.push(sql<SqlBool>`${POST_FILTER_TOKENS} && ARRAY(${accounts})`);
  }
  return where;
}
