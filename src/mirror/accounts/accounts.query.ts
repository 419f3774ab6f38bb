import { Injectable } from '@nestjs/common';
import { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import { DatabaseService, Db } from '../../database/database.service';
import type { DB } from '../../generated/kysely/database';
import { ALL_WORKSPACES, readsNothing, Workspaces } from '../../common/read-scope';
import { atMostOne } from '../ambiguous-id';
import { decodeCursor, page } from '../cursor';
import { present } from '../whole-object';
import { ACCOUNT_FIELD_ORDER, accountJson } from './account-fields';
import { ListAccountsQuery } from './dto/list-accounts.query';

/** A mirrored account as the query endpoints answer it: Pozy's fields, then the mirror's (see account-fields.ts). */
export type MirroredAccount = Record<string, unknown>;

const DEFAULT_LIMIT = 50;

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class AccountsQuery {
  constructor(private readonly database: DatabaseService) {}

  /** `db`: the primary's, or the read replica's. */
  /** `workspaces`: the reader's scope, cut to what it asked for. */
  async list(
    query: ListAccountsQuery,
    db: Db = this.database.db,
    workspaces: Workspaces = ALL_WORKSPACES,
  ): Promise<{ data: MirroredAccount[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor);
    if (readsNothing(workspaces)) return { data: [], nextCursor: null };
    const rows = await db
      .selectFrom('account')
      .select(['account.workspace_id', 'account.id', accountJson('account').as('body')])
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
    return { data: data.map((row) => present(row.body, ACCOUNT_FIELD_ORDER, query.fields)), nextCursor };
  }

  /** As PostsQuery.get: 409 `ambiguous_id` when more than one of the reader's workspaces holds this id. */
  async get(id: string, fields?: string[], db: Db = this.database.db, workspaces: Workspaces = ALL_WORKSPACES): Promise<MirroredAccount | undefined> {
    if (readsNothing(workspaces)) return undefined;
    const rows = await db
      .selectFrom('account')
      .select(['account.workspace_id', accountJson('account').as('body')])
      .where((eb) => eb.and([eb('account.id', '=', id), ...inWorkspaces(eb, workspaces)]))
      .orderBy('account.workspace_id')
      .execute();
    const [row] = atMostOne('Account', id, rows);
    return row && present(row.body, ACCOUNT_FIELD_ORDER, fields);
  }
}

function conditions(eb: ExpressionBuilder<DB, 'account'>, query: ListAccountsQuery): Array<Expression<SqlBool>> {
  const where: Array<Expression<SqlBool>> = [];
  if (query.profileId !== undefined) where.push(eb('account.profile_id', '=', query.profileId));
  if (query.platform !== undefined) where.push(eb('account.platform', '=', query.platform));
  // Connected: active and not waiting for the user to reconnect.
  if (query.connected === true) where.push(eb.and([eb('account.is_active', '=', true), eb('account.needs_reconnection', '=', false)]));
  if (query.connected === false) where.push(eb.or([eb('account.is_active', '=', false), eb('account.needs_reconnection', '=', true)]));
  if (query.enabled !== undefined) where.push(eb('account.enabled', '=', query.enabled));
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
