import { RawBuilder, sql } from 'kysely';
import type { Db } from '../../database/database.service';
import { fixedSql } from '../../database/precompiled';
import { JsonText, wholeObjectText } from '../whole-object';
import { POST_FIELD_ORDER, profilesOf, wholePost } from './post-fields';

/**
 * A post's whole answer (what GET /posts and GET /posts/:id send for it, `profileIds` included) is built by PostgreSQL
 * when the row is written and kept in `post.answer`, so a page reads one column per post instead of building each one
 * on every read. The function `post_answer(post)` builds it, and the trigger `post_keep_answer` calls it on every
 * insert and update of a post. An account mirrored for the first time rewrites its posts through refreshProfiles, and
 * the trigger `account_moved_rewrites_answers` those of an account moved to another profile (migration
 * 20261210100000_post_answer). The function's body is this file's expression, character for character:
 * test/post-answer.e2e-spec.ts fails when they differ, and prints the statement a new migration needs.
 */

/** The whole answer of the row `post` names (the table, or the function's argument of that name). */
export const postAnswerExpression = (db: Db): RawBuilder<JsonText> =>
  fixedSql(wholeObjectText(wholePost('post', sql`(${profilesOf(db, sql.ref('post.workspace_id'), sql.ref('post.account_ids'))})`), POST_FIELD_ORDER));

/** The body of `post_answer(post post)`: one SELECT of the expression, the argument standing for the row. */
export const postAnswerFunctionBody = (db: Db): string => ` SELECT ${postAnswerExpression(db).compile(db).sql} `;

/** The statement that makes `post_answer` build what this version of the code answers: for a migration. */
export const postAnswerFunctionSql = (db: Db): string =>
  `CREATE OR REPLACE FUNCTION post_answer(post post) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$${postAnswerFunctionBody(db)}$$;`;

/** The stored answer, as the read path selects it. */
export const storedAnswer = sql<JsonText>`${sql.ref('post.answer')}`;
