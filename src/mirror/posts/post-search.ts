import { Expression, ExpressionBuilder, sql, SqlBool } from 'kysely';
import type { DB } from '../../generated/kysely/database';

/**
 * GET /posts?q=: PostgreSQL's full-text search over title and content, in the `simple` configuration, which splits
 * every language into words alike (no stemming, no stop words), so a word matches in its exact form, case aside.
 * The document expression is, character for character, that of the index post_search_idx (migration
 * 20261130162440_whole_posts_and_accounts): only an identical expression lets the planner use it.
 */
export function matchesSearch(eb: ExpressionBuilder<DB, 'post'>, q: string): Expression<SqlBool> {
  const document = sql`to_tsvector('simple'::regconfig, coalesce(${eb.ref('post.title')}, '') || ' ' || coalesce(${eb.ref('post.content')}, ''))`;
  return sql<SqlBool>`${document} @@ websearch_to_tsquery('simple'::regconfig, ${q})`;
}
