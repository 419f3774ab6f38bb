import { Injectable } from '@nestjs/common';
import { Expression, ExpressionBuilder, RawBuilder, SqlBool } from 'kysely';
import { DatabaseService, Db } from '../../database/database.service';
import type { DB } from '../../generated/kysely/database';
import { ALL_WORKSPACES, readsNothing, Workspaces } from '../../common/read-scope';
import { atMostOne } from '../ambiguous-id';
import { decodeCursor, page } from '../cursor';
import { fixedSql } from '../../database/precompiled';
import { JsonText, wholeObjectText } from '../whole-object';
import { ACCOUNT_FIELD_ORDER, wholeAccount } from './account-fields';
import { ListAccountsQuery } from './dto/list-accounts.query';
import { GenerateSql, Sample } from '../../database/sql-snapshot';

const DEFAULT_LIMIT = 50;

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class AccountsQuery {
  /** The whole answer, the same expression on every page: built and compiled once, not on every request. */
  private readonly wholeAnswer: RawBuilder<JsonText>;

  constructor(private readonly database: DatabaseService) {
    this.wholeAnswer = fixedSql(answer(undefined));
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private answerOf(fields: readonly string[] | undefined): RawBuilder<JsonText> {
    return fields === undefined ? this.wholeAnswer : answer(fields);
  }

  /** `db`: the primary's, or the read replica's. */
  /** `workspaces`: the reader's scope, cut to what it asked for. */
  @GenerateSql({ params: [{}] })
  async list(
    query: ListAccountsQuery,
    db: Db = this.database.db,
    workspaces: Workspaces = ALL_WORKSPACES,
  ): Promise<{ data: JsonText[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor);
    if (readsNothing(workspaces)) return { data: [], nextCursor: null };
    const rows = await db
      .selectFrom('account')
      .select(['account.workspace_id', 'account.id', this.answerOf(query.fields).as('body')])
      .where((eb) =>
        eb.and([
          ...conditions(eb, query),
          ...inWorkspaces(eb, workspaces),
          ...(after === null
            ? []
            : after.workspace === undefined
              ? [eb('account.id', '>', after.after)]
              : [eb(eb.refTuple('account.id', 'account.workspace_id'), '>', eb.tuple(after.after, after.workspace))]),
        ]),
      )
      .orderBy('account.id')
      .orderBy('account.workspace_id')
      .limit(limit + 1)
      .execute();
    const { data, nextCursor } = page(rows, limit);
    return { data: data.map((row) => row.body), nextCursor };
  }

  /** As PostsQuery.get: 409 `ambiguous_id` when more than one of the reader's workspaces holds this id. */
  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string, fields?: string[], db: Db = this.database.db, workspaces: Workspaces = ALL_WORKSPACES): Promise<JsonText | undefined> {
    if (readsNothing(workspaces)) return undefined;
    const rows = await db
      .selectFrom('account')
      .select(['account.workspace_id', this.answerOf(fields).as('body')])
      .where((eb) => eb.and([eb('account.id', '=', id), ...inWorkspaces(eb, workspaces)]))
      .orderBy('account.workspace_id')
      .execute();
    const [row] = atMostOne('Account', id, rows);
    return row?.body;
  }
}

function conditions(eb: ExpressionBuilder<DB, 'account'>, query: ListAccountsQuery): Array<Expression<SqlBool>> {
  const where: Array<Expression<SqlBool>> = [];
  if (query.profileId !== undefined) where.push(eb('account.profile_id', '=', query.profileId));
  if (query.platform !== undefined) where.push(eb('account.platform', '=', query.platform));
  // Connected: active and not waiting for the user to reconnect. As literals, the predicates of the partial indexes
  // account_disconnected_idx and account_disabled_idx (migration 20261205121000_account_filters), which find the few.
  if (query.connected === true)
    where.push(eb.and([eb('account.is_active', '=', eb.lit(true)), eb('account.needs_reconnection', '=', eb.lit(false))]));
  if (query.connected === false)
    where.push(eb.or([eb('account.is_active', '=', eb.lit(false)), eb('account.needs_reconnection', '=', eb.lit(true))]));
  if (query.enabled !== undefined) where.push(eb('account.enabled', '=', eb.lit(query.enabled)));
  if (query.q !== undefined) {
    // A part of the username or the display name, case aside. A workspace holds thousands of accounts, not millions:
    // a scan of them costs less than keeping a trigram index (an extension) on every write.
    const pattern = `%${query.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push(eb.or([eb('account.username', 'ilike', pattern), eb('account.display_name', 'ilike', pattern)]));
  }
  if (query.includeRemoved !== true) where.push(eb('account.removed_at', 'is', null));
  return where;
}

/** Only the rows of these workspaces ('*': every one). */
function inWorkspaces(eb: ExpressionBuilder<DB, 'account'>, workspaces: Workspaces): Array<Expression<SqlBool>> {
  return workspaces === ALL_WORKSPACES ? [] : [eb('account.workspace_id', '=', eb.fn.any(eb.val([...workspaces])))];
}

const answer = (fields: readonly string[] | undefined) => wholeObjectText(wholeAccount('account'), ACCOUNT_FIELD_ORDER, fields);
