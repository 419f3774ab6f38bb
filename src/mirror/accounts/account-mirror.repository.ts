import { Injectable } from '@nestjs/common';
import { Insertable, sql } from 'kysely';
import { afterCommit, transaction } from '../../database/after-commit';
import { DatabaseService, Db } from '../../database/database.service';
import type { DB } from '../../generated/kysely/database';
import { NotificationSignal } from '../../notifications/notification-signal';
import { PozyAccountDto } from '../../pozy/dto/pozy-account.dto';
import { ChangeSignal } from '../../changes/change-signal';
import { PostMirrorRepository } from '../posts/post-mirror.repository';
import { RecordedEntry } from '../../changes/record-changes';
import { fanOut } from '../change-notifications';
import { eventIdsOf, versionedChangesQuery } from '../history/record-versions';
import { GuardedTable, guardedUpsert, rowsFromJson, WrittenQuery, WrittenRow } from '../mirror-write';
import { wholeObjectJson } from '../whole-object';
import { accountColumns, AccountColumns, wholeAccount } from './account-fields';
import type { WorkspaceId } from '../../common/workspace-id';
import { GenerateSql, Sample } from '../../database/sql-snapshot';

export interface ProfileRead {
  readId: string;
  startedAt: Date;
  /** Per account id, the latest timestamp among the events this read answers. */
  lastEventAt: Map<string, Date>;
}

export interface ProfileWriteOutcome {
  written: number;
  /** Accounts the mirror did not hold before. */
  created: number;
  removed: number;
  stale: number;
  /** Accounts whose mirrored state changed (removals included). */
  changed: number;
  /** Change notifications queued for subscribers, in the same transaction. */
  notified: number;
  /** The feed entries it appended, for their spans: inside a recording span only (fanOutResult), none otherwise. */
  entries: RecordedEntry[];
}

/** The whole account as Pozy answered it, as the mirror holds it. */
const ACCOUNT_STATE = ['profile_id', 'platform', 'username', 'display_name', 'is_active', 'needs_reconnection', 'enabled', 'extra'] as const;

/** The account's guarded upsert: accounts have no version in Pozy, so the read that started later wins. */
const ACCOUNTS: GuardedTable<'account'> = {
  table: 'account',
  gone: 'removed_at',
  state: ACCOUNT_STATE,
  fromRead: ACCOUNT_STATE,
  guard: (eb) => eb('excluded.read_started_at', '>', eb.ref('account.read_started_at')),
};

/** What a write of accounts did: rows written, of which created and changed, and what it queued. */
export interface AccountsWritten {
  written: number;
  created: number;
  changed: number;
  /** Notifications queued, those of posts whose profiles the new accounts changed included. */
  notified: number;
  /** The feed entries it appended, likewise, for their spans (PostWriteResult.entries). */
  entries: RecordedEntry[];
}

@Injectable()
export class AccountMirrorRepository {
  constructor(
    private readonly database: DatabaseService,
    private readonly signal: NotificationSignal,
    private readonly changeSignal: ChangeSignal,
    private readonly posts: PostMirrorRepository,
  ) {}

  /**
   * Writes a profile's whole account list in one transaction: every account listed, and the removal of the rest,
   * with the notifications of what changed.
   */
  @GenerateSql({
    params: [Sample.WORKSPACE, Sample.UUID, [Sample.ACCOUNT], { ...Sample.READ, lastEventAt: new Map([[Sample.STRING, Sample.DATE]]) }],
  })
  async writeProfile(workspaceId: WorkspaceId, profileId: string, accounts: PozyAccountDto[], read: ProfileRead): Promise<ProfileWriteOutcome> {
    const { written, removed } = await transaction(this.database.db, async (trx) => ({
      written: await this.writeAccounts(workspaceId, accounts, read, trx),
      removed: await this.markRemoved(
        workspaceId,
        profileId,
        accounts.map((account) => account._id),
        read,
        trx,
      ),
    }));
    return {
      written: written.written,
      created: written.created,
      removed: removed.written,
      stale: accounts.length - written.written,
      changed: written.changed + removed.changed,
      notified: written.notified + removed.notified,
      entries: [...written.entries, ...removed.entries],
    };
  }

  /** Which of these account ids the mirror holds (removed ones included). */
  @GenerateSql({ params: [Sample.WORKSPACE, [Sample.UUID]] })
  async existing(workspaceId: WorkspaceId, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.database.db.selectFrom('account').select('id').where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute();
    return new Set(rows.map((r) => r.id));
  }

  /** Which of these accounts the mirror holds exactly as Pozy listed them (bookkeeping aside). */
  @GenerateSql({ params: [Sample.WORKSPACE, [Sample.ACCOUNT]] })
  async unchanged(workspaceId: WorkspaceId, accounts: PozyAccountDto[]): Promise<Set<string>> {
    const rows = await this.database.db
      .selectFrom('account as a')
      .innerJoin(rowsFromJson('account', accounts.map(accountColumns)), 'input.id', 'a.id')
      .select('a.id')
      .where((eb) =>
        eb.and([
          eb('a.workspace_id', '=', workspaceId),
          eb('a.removed_at', 'is', null),
          sql<boolean>`(${sql.join(ACCOUNT_STATE.map((column) => eb.ref(`a.${column}`)))})
                       IS NOT DISTINCT FROM (${sql.join(ACCOUNT_STATE.map((column) => eb.ref(`input.${column}`)))})`,
        ]),
      )
      .execute();
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Writes accounts of any profiles as one read listed them, removing none (a part of a list says nothing of what
   * it leaves out), inside the caller's transaction (opened with `transaction`): the signals are raised once it commits.
   * Accounts have no version in Pozy: the read that started later wins.
   */
  @GenerateSql({ params: [Sample.WORKSPACE, [Sample.ACCOUNT], { ...Sample.READ, lastEventAt: new Map([[Sample.STRING, Sample.DATE]]) }, Sample.DB] })
  async writeAccounts(workspaceId: WorkspaceId, accounts: PozyAccountDto[], read: ProfileRead, trx: Db): Promise<AccountsWritten> {
    const rows: Array<AccountColumns & Pick<Insertable<DB['account']>, 'last_event_at'>> = accounts.map((account) => ({
      ...accountColumns(account),
      last_event_at: read.lastEventAt.get(account._id)?.toISOString() ?? null,
    }));
    const written = guardedUpsert(trx, ACCOUNTS, workspaceId, rows, read);
    const row = await this.fanOut(trx, written);
    const posts = await this.posts.refreshProfiles(workspaceId, row.created_ids, read.readId, trx);
    return {
      written: row.written,
      created: row.created,
      changed: row.changed,
      notified: row.notified + posts.notified,
      entries: [...row.entries, ...posts.entries],
    };
  }

  /** Accounts of the profile that its list no longer has were removed (kept, queryable, marked). */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private markRemoved(workspaceId: WorkspaceId, profileId: string, listed: string[], read: ProfileRead, trx: Db) {
    const written = trx
      .updateTable('account')
      .set((eb) => ({
        removed_at: eb.fn('now'),
        synced_at: eb.fn('now'),
        read_started_at: read.startedAt,
        read_id: read.readId,
        sequence: eb('sequence', '+', eb.lit(1)),
        changed_by: read.readId,
      }))
      .where((eb) =>
        eb.and([
          eb('workspace_id', '=', workspaceId),
          eb('profile_id', '=', profileId),
          eb.not(eb('id', '=', eb.fn.any(eb.val(listed)))),
          eb('removed_at', 'is', null),
          eb('read_started_at', '<', read.startedAt),
        ]),
      )
      .returningAll()
      .returning(sql<boolean>`false`.as('inserted'));
    return this.fanOut(trx, written);
  }

  /**
   * `written` (the write, returning the rows it touched) with the feed entries, versions and notifications of what it
   * changed, in one statement. What the feed, the history and subscribers see of a change: the account as
   * GET /accounts/:id answers it.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async fanOut(db: Db, written: WrittenQuery<'account'>) {
    const ctes = db.withTables<{ written: WrittenRow<'account'> }>();
    const row = await fanOut(
      db,
      written,
      versionedChangesQuery(
        ctes
          .selectFrom('written as w')
          // The read that changed the row leaves its id in changed_by: a re-read of the same state does not.
          .where('w.changed_by', '=', (eb) => eb.ref('w.read_id'))
          .select((eb) => [
            'w.workspace_id',
            eb.case().when('w.removed_at', 'is', null).then(sql.lit('account.changed')).else(sql.lit('account.removed')).end().as('type'),
            sql<string>`'account:' || ${eb.ref('w.id')}`.as('resource_key'),
            'w.id as resource_id',
            'w.sequence',
            sql<Date | null>`NULL::timestamptz`.as('pozy_updated_at'),
            sql<string[]>`ARRAY[${eb.ref('w.platform')}]`.as('platforms'),
            sql<string[]>`ARRAY[${eb.ref('w.profile_id')}]`.as('profile_ids'),
            wholeObjectJson(wholeAccount('w')).as('resource'),
            eb.ref('w.read_started_at').as('read_at'),
            'w.read_id',
            eventIdsOf(db, {
              workspaceId: eb.ref('w.workspace_id'),
              resourceType: 'profile',
              resourceId: eb.ref('w.profile_id'),
              accountId: eb.ref('w.id'),
              readAt: eb.ref('w.read_started_at'),
            }).as('event_ids'),
          ]),
      ),
    )
      .select(
        ctes
          .selectFrom('written')
          .select((eb) => eb.fn.coalesce(eb.fn.agg<string[]>('array_agg', ['id']), sql<string[]>`'{}'`).as('ids'))
          .where('inserted', '=', true)
          .$asScalar()
          .as('created_ids'),
      )
      .executeTakeFirstOrThrow();
    afterCommit(db, () => {
      this.signal.queued(row.notified);
      this.changeSignal.recorded(row.recorded);
    });
    return row;
  }
}
