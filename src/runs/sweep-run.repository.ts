import { Injectable } from '@nestjs/common';
import { Expression, QueryCreator, Selectable, sql } from 'kysely';
import { boundedText } from '../common/bounded-text';
import { transaction } from '../database/after-commit';
import { DatabaseService, Db } from '../database/database.service';
import type { DB } from '../generated/kysely/database';
import { DEFAULT_WORKSPACE, type WorkspaceId } from '../common/workspace-id';
import { GenerateSql, Sample } from '../database/sql-snapshot';
import type { PostVersion } from '../mirror/posts/post-mirror.repository';

export const RUN_KINDS = ['import', 'sweep'] as const;
export type RunKind = (typeof RUN_KINDS)[number];
const RUN_TRIGGERS = ['auto', 'admin', 'schedule'] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];
const RUN_STATUSES = ['running', 'succeeded', 'failed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** In order: list accounts, list posts, then walk the mirror for accounts and posts Pozy no longer lists. */
export const RUN_PHASES = ['accounts', 'posts', 'missing-accounts', 'missing-posts', 'done'] as const;
export type RunPhase = (typeof RUN_PHASES)[number];
/** What `sweep_seen` records: accounts, and the posts of each listing pass. */
export type SweepResource = 'account' | 'post' | `post-${number}`;

/** The `sweep_seen` tag of a listing pass's posts. */
export const postsSeenIn = (pass: number): SweepResource => (pass === 1 ? 'post' : `post-${pass}`);

export interface SweepCounts {
  created: number;
  changed: number;
  /** Posts Pozy answers 404 for; accounts their profile no longer lists. */
  deleted: number;
  unchanged: number;
}

export interface SweepRun {
  workspaceId: WorkspaceId;
  id: string;
  kind: RunKind;
  trigger: RunTrigger;
  dryRun: boolean;
  status: RunStatus;
  phase: RunPhase;
  owner: string | null;
  startedAt: Date;
  resumedAt: Date;
  postsDoneAtResume: number;
  finishedAt: Date | null;
  pass: number;
  postsOffset: number;
  accountsListedFrom: Date | null;
  postsListedFrom: Date | null;
  missingCursor: string | null;
  accountsTotal: number | null;
  postsTotal: number | null;
  accountsDone: number;
  postsDone: number;
  pagesRead: number;
  posts: SweepCounts;
  accounts: SweepCounts;
  lastError: string | null;
  error: string | null;
  /** The database's clock when the row was read, for rates and estimates that must not depend on ours. */
  readAt: Date;
}

/** What a page (or a chunk of the walk) adds to a run, written with its checkpoint in the page's transaction. */
export interface RunProgress {
  phase?: RunPhase;
  /**
   * Starts the next listing pass of the posts from the beginning. What the run has listed (`postsDone`, `postsTotal`)
   * and its rate's start stay: a later pass adds only the posts no earlier one saw, so the run's figures never go back.
   */
  nextPass?: true;
  postsOffset?: number;
  accountsListedFrom?: Date;
  postsListedFrom?: Date;
  /** Set with a phase change too: null starts the next walk from the beginning. */
  missingCursor?: string | null;
  accountsTotal?: number;
  /** Pozy's count at the page: the run keeps the most it counted (its total never goes back). */
  postsTotal?: number;
  accountsDone?: number;
  /** Posts the page adds to those the run has listed: each post once, whichever pass listed it first. */
  postsDone?: number;
  pagesRead?: number;
  posts?: Partial<SweepCounts>;
  accounts?: Partial<SweepCounts>;
}

/** The replica writing the checkpoint no longer owns the run (another one took it over): it must stop. */
export class LostRunError extends Error {
  constructor(runId: string) {
    super(`Run ${runId} is no longer this replica's`);
    this.name = 'LostRunError';
  }
}

/** The database's clock, read with the row. */
const readAt = sql<Date>`now()`.as('read_at');

type RunRow = Selectable<DB['sweep_run']> & { read_at: Date };

/** `value`, one of `values`, or an error naming the column that holds something this version does not know. */
function oneOf<T extends string>(values: readonly T[], value: string, column: string): T {
  const known = values.find((v) => v === value);
  if (known === undefined) throw new Error(`sweep_run.${column} holds '${value}', which this version does not know`);
  return known;
}

function toRun(r: RunRow): SweepRun {
  return {
    workspaceId: r.workspace_id,
    id: r.id,
    kind: oneOf(RUN_KINDS, r.kind, 'kind'),
    trigger: oneOf(RUN_TRIGGERS, r.trigger, 'trigger'),
    dryRun: r.dry_run,
    status: oneOf(RUN_STATUSES, r.status, 'status'),
    phase: oneOf(RUN_PHASES, r.phase, 'phase'),
    owner: r.owner,
    startedAt: r.started_at,
    resumedAt: r.resumed_at,
    postsDoneAtResume: r.posts_done_at_resume,
    finishedAt: r.finished_at,
    pass: r.pass,
    postsOffset: r.posts_offset,
    accountsListedFrom: r.accounts_listed_from,
    postsListedFrom: r.posts_listed_from,
    missingCursor: r.missing_cursor,
    accountsTotal: r.accounts_total,
    postsTotal: r.posts_total,
    accountsDone: r.accounts_done,
    postsDone: r.posts_done,
    pagesRead: r.pages_read,
    posts: { created: r.posts_created, changed: r.posts_changed, deleted: r.posts_deleted, unchanged: r.posts_unchanged },
    accounts: { created: r.accounts_created, changed: r.accounts_changed, deleted: r.accounts_deleted, unchanged: r.accounts_unchanged },
    lastError: r.last_error,
    error: r.error,
    readAt: r.read_at,
  };
}

/** The chunk of the mirror one step of the walk for missing rows covers. */
const WALK_CHUNK = 10_000;

/** The runs (`sweep_run`) and what each has seen listed (`sweep_seen`). */
@Injectable()
export class SweepRunRepository {
  constructor(private readonly database: DatabaseService) {}

  @GenerateSql({ params: [{ workspaceId: Sample.WORKSPACE, id: Sample.UUID, kind: 'import', trigger: 'api', dryRun: false, owner: Sample.STRING }] })
  async create(run: Pick<SweepRun, 'workspaceId' | 'id' | 'kind' | 'trigger' | 'dryRun' | 'owner'>): Promise<SweepRun> {
    const row = await this.database.db
      .insertInto('sweep_run')
      .values({
        workspace_id: run.workspaceId,
        id: run.id,
        kind: run.kind,
        trigger: run.trigger,
        dry_run: run.dryRun,
        status: 'running',
        phase: 'accounts',
        owner: run.owner,
      })
      .returningAll()
      .returning(readAt)
      .executeTakeFirstOrThrow();
    return toRun(row);
  }

  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string): Promise<SweepRun | undefined> {
    const row = await this.database.db.selectFrom('sweep_run').selectAll().select(readAt).where('id', '=', id).executeTakeFirst();
    return row && toRun(row);
  }

  /** The run in progress, if any: at most one runs at a time. */
  @GenerateSql({ params: [Sample.WORKSPACE] })
  async running(workspaceId: WorkspaceId): Promise<SweepRun | undefined> {
    const row = await this.database.db
      .selectFrom('sweep_run')
      .selectAll()
      .select(readAt)
      .where('workspace_id', '=', workspaceId)
      .where('status', '=', 'running')
      .orderBy('started_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && toRun(row);
  }

  /** The newest run of `kind`; in the caller's snapshot when it passes one. */
  @GenerateSql({ params: [Sample.WORKSPACE, 'import'] })
  async latest(workspaceId: WorkspaceId, kind: RunKind, db: Db = this.database.db): Promise<SweepRun | undefined> {
    const row = await db
      .selectFrom('sweep_run')
      .selectAll()
      .select(readAt)
      .where('workspace_id', '=', workspaceId)
      .where('kind', '=', kind)
      .orderBy('started_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && toRun(row);
  }

  /** Whether a run has ever listed the whole workspace into the mirror (an import, or a full sweep that wrote). */
  @GenerateSql({ params: [Sample.WORKSPACE] })
  async completedOnce(workspaceId: WorkspaceId, db: Db = this.database.db): Promise<boolean> {
    const run = await db
      .selectFrom('sweep_run')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('status', '=', 'succeeded')
      .where('dry_run', '=', false)
      .limit(1)
      .executeTakeFirst();
    return run !== undefined;
  }

  /**
   * How many active workspaces' latest import failed with no run having listed the workspace since (the import state
   * `failed` of `status()`), `default` counted when the environment defines it (`environmentDefault`: its row, if
   * any, is not the workspace then). Paused, removing and detached workspaces are not counted: none is imported or
   * retried. One statement, in the caller's snapshot, that starts from the failed imports (a few, on the partial index
   * sweep_run_import_failed_idx, whose predicate the literals match) and probes each workspace's newest import and
   * any run that listed it, LATERAL with a LIMIT so that the planner never reads every run instead.
   */
  @GenerateSql({ params: [true] })
  async failedImports(environmentDefault: boolean, db: Db = this.database.db): Promise<number> {
    const { n } = await db
      .selectFrom('sweep_run as f')
      .leftJoin('workspace as w', 'w.id', 'f.workspace_id')
      .innerJoinLateral(
        (eb) =>
          eb
            .selectFrom('sweep_run as r')
            .select('r.id')
            .whereRef('r.workspace_id', '=', 'f.workspace_id')
            .where('r.kind', '=', sql.lit('import'))
            .orderBy('r.started_at', 'desc')
            .limit(1)
            .as('latest'),
        (join) => join.onTrue(),
      )
      .leftJoinLateral(
        (eb) =>
          eb
            .selectFrom('sweep_run as s')
            .select(eb.lit(1).as('one'))
            .whereRef('s.workspace_id', '=', 'f.workspace_id')
            .where('s.status', '=', sql.lit('succeeded'))
            .where('s.dry_run', '=', false)
            .limit(1)
            .as('listed'),
        (join) => join.onTrue(),
      )
      .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
      .where('f.kind', '=', sql.lit('import'))
      .where('f.status', '=', sql.lit('failed'))
      .whereRef('latest.id', '=', 'f.id')
      .where('listed.one', 'is', null)
      .where((eb) =>
        environmentDefault
          ? eb.or([eb('f.workspace_id', '=', DEFAULT_WORKSPACE), eb('w.state', '=', sql.lit('active'))])
          : eb('w.state', '=', sql.lit('active')),
      )
      .executeTakeFirstOrThrow();
    return n;
  }

  /**
   * Per workspace that has runs: whether one is marked running, and whether one ever listed the workspace whole. One
   * statement for every workspace, so that the supervisor's look costs the same at one workspace and at thousands.
   */
  @GenerateSql({ params: [] })
  async overview(): Promise<Map<WorkspaceId, { running: boolean; completed: boolean }>> {
    const rows = await this.database.db
      .selectFrom('sweep_run')
      .select((eb) => [
        'workspace_id',
        eb.fn.agg<boolean>('bool_or', [eb('status', '=', 'running')]).as('running'),
        eb.fn.agg<boolean>('bool_or', [eb.and([eb('status', '=', 'succeeded'), eb('dry_run', '=', false)])]).as('completed'),
      ])
      .groupBy('workspace_id')
      .execute();
    return new Map(rows.map((row) => [row.workspace_id, { running: row.running, completed: row.completed }]));
  }

  /** Takes the run over (a resume): from now on only `owner` writes its checkpoint. */
  @GenerateSql({ params: [Sample.UUID, Sample.STRING] })
  async claim(id: string, owner: string): Promise<SweepRun> {
    const row = await this.database.db
      .updateTable('sweep_run')
      .set((eb) => ({
        owner,
        status: 'running',
        error: null,
        finished_at: null,
        resumed_at: eb.fn('now'),
        posts_done_at_resume: eb.ref('posts_done'),
      }))
      .where('id', '=', id)
      .returningAll()
      .returning(readAt)
      .executeTakeFirst();
    if (!row) throw new Error(`No run ${id}`);
    return toRun(row);
  }

  /**
   * One transaction: `write` (a page's mirror write, whose signals are raised once it commits: `afterCommit`), then
   * what the run saw and its checkpoint, in one statement, so that a crash never leaves a page written without its
   * checkpoint or the other way round. `progress` is asked for once `write` has run (it counts what the write did).
   * Throws LostRunError if `owner` no longer owns the run.
   */
  @GenerateSql({
    params: [
      { workspaceId: Sample.WORKSPACE, id: Sample.UUID, owner: Sample.STRING },
      { resource: 'post', ids: [Sample.STRING] },
      async () => {},
      () => ({ postsDone: 1 }),
    ],
  })
  commitPage(
    run: { workspaceId: WorkspaceId; id: string; owner: string },
    seen: { resource: SweepResource; ids: string[] },
    write: (trx: Db) => Promise<void>,
    progress: () => RunProgress,
    after?: Promise<unknown>,
  ): Promise<void> {
    return transaction(this.database.db, async (trx) => {
      // The page commits without waiting for its WAL to reach the disk (the service's own crash loses nothing: the
      // commit is PostgreSQL's). A crash of PostgreSQL or its machine may then lose the pages committed in its last
      // moment (at most 3 × wal_writer_delay), never part of one: the page's rows, feed entries, versions,
      // notifications, what it saw and its checkpoint are one transaction, and a resume starts from the checkpoint
      // that survived, listing the lost pages again and writing them as they were. Nothing lasting builds on a lost
      // page first: any transaction that commits synchronously afterwards (the sequencer placing its feed entries,
      // a delivery's attempt, a webhook's write of the same post) flushes the WAL up to its own commit, this page's
      // included. What a reader saw of a lost page in that moment (a notification sent, at least once anyway) is
      // written again, with the same sequence, by the resumed run.
      await sql`SET LOCAL synchronous_commit = off`.execute(trx);
      await write(trx);
      // The checkpoint after the page before it: a later page's waits here, holding its rows, until that one commits.
      await after;
      await this.advance(run.id, run.owner, progress(), trx, { workspaceId: run.workspaceId, ...seen });
    });
  }

  /**
   * Writes progress and the checkpoint (inside the page's transaction, if given), and with them, in the same
   * statement, the ids the page saw (`seen`); throws LostRunError if not the owner.
   */
  @GenerateSql(
    { params: [Sample.UUID, Sample.STRING, { postsDone: 1 }] },
    { name: "with Pozy's count, of which the run keeps the most", params: [Sample.UUID, Sample.STRING, { postsDone: 1, postsTotal: 1 }] },
    {
      name: 'with what the page saw',
      params: [Sample.UUID, Sample.STRING, { postsDone: 1 }, Sample.DB, { workspaceId: Sample.WORKSPACE, resource: 'post', ids: [Sample.STRING] }],
    },
  )
  async advance(
    id: string,
    owner: string,
    p: RunProgress,
    db: Db = this.database.db,
    seen?: { workspaceId: WorkspaceId; resource: SweepResource; ids: string[] },
  ): Promise<void> {
    const add = (n: number | undefined) => n ?? 0;
    // What the page saw goes in as a CTE of the checkpoint's statement: one round trip less per page.
    // (Typed as the plain creator: the update reads nothing of the CTE.)
    const base: QueryCreator<DB> =
      seen && seen.ids.length > 0
        ? (db.with('seen', (qc) => this.seenInsert(qc, seen.workspaceId, id, seen.resource, seen.ids)) as unknown as QueryCreator<DB>)
        : db;
    const { numUpdatedRows } = await base
      .updateTable('sweep_run')
      .set((eb) => ({
        phase: p.phase ?? eb.ref('phase'),
        posts_offset: p.postsOffset ?? eb.ref('posts_offset'),
        accounts_listed_from: eb.fn.coalesce('accounts_listed_from', eb.val(p.accountsListedFrom ?? null)),
        posts_listed_from: eb.fn.coalesce('posts_listed_from', eb.val(p.postsListedFrom ?? null)),
        // Null starts the next walk from the beginning.
        missing_cursor: p.missingCursor !== undefined ? p.missingCursor : eb.ref('missing_cursor'),
        accounts_total: p.accountsTotal ?? eb.ref('accounts_total'),
        // The most Pozy counted during the run (or since a release that reset it): a progress bar's end never moves back.
        posts_total: p.postsTotal === undefined ? eb.ref('posts_total') : eb.fn<number>('greatest', [eb.ref('posts_total'), eb.val(p.postsTotal)]),
        accounts_done: eb('accounts_done', '+', add(p.accountsDone)),
        posts_done: eb('posts_done', '+', add(p.postsDone)),
        pages_read: eb('pages_read', '+', add(p.pagesRead)),
        posts_created: eb('posts_created', '+', add(p.posts?.created)),
        posts_changed: eb('posts_changed', '+', add(p.posts?.changed)),
        posts_deleted: eb('posts_deleted', '+', add(p.posts?.deleted)),
        posts_unchanged: eb('posts_unchanged', '+', add(p.posts?.unchanged)),
        accounts_created: eb('accounts_created', '+', add(p.accounts?.created)),
        accounts_changed: eb('accounts_changed', '+', add(p.accounts?.changed)),
        accounts_deleted: eb('accounts_deleted', '+', add(p.accounts?.deleted)),
        accounts_unchanged: eb('accounts_unchanged', '+', add(p.accounts?.unchanged)),
        last_error: null,
      }))
      .where('id', '=', id)
      .where('owner', '=', owner)
      .where('status', '=', 'running')
      .executeTakeFirst();
    if (numUpdatedRows !== 1n) throw new LostRunError(id);
    if (p.nextPass) {
      // The listing starts again from the beginning; what the run has listed, Pozy's count and the rate's start stay.
      await db
        .updateTable('sweep_run')
        .set((eb) => ({
          pass: eb('pass', '+', 1),
          posts_offset: 0,
          posts_listed_from: null,
        }))
        .where('id', '=', id)
        .execute();
    }
  }

  /** A transient failure the run is waiting out (null: past it). */
  @GenerateSql({ params: [Sample.UUID, Sample.STRING, null] })
  async noteError(id: string, owner: string, message: string | null): Promise<void> {
    await this.database.db
      .updateTable('sweep_run')
      .set({ last_error: message === null ? null : boundedText(message) })
      .where('id', '=', id)
      .where('owner', '=', owner)
      .execute();
  }

  /** Stopped, not finished: the run stays `running` with no owner, for whichever replica resumes it. */
  @GenerateSql({ params: [Sample.UUID, Sample.STRING] })
  async release(id: string, owner: string): Promise<void> {
    await this.database.db.updateTable('sweep_run').set({ owner: null }).where('id', '=', id).where('owner', '=', owner).execute();
  }

  /**
   * Ends the run. What it saw is forgotten, except by a failed import: that one is resumed from its checkpoint,
   * and needs it.
   */
  @GenerateSql({ params: [Sample.UUID, Sample.STRING, 'succeeded', null] })
  async finish(id: string, owner: string, status: 'succeeded' | 'failed', error: string | null): Promise<void> {
    const row = await this.database.db
      .updateTable('sweep_run')
      .set((eb) => ({
        status,
        error: error === null ? null : boundedText(error),
        phase: status === 'succeeded' ? 'done' : eb.ref('phase'),
        finished_at: eb.fn('now'),
        owner: null,
      }))
      .where('id', '=', id)
      .where('owner', '=', owner)
      .returning(['workspace_id', 'kind'])
      .executeTakeFirst();
    if (!row) throw new LostRunError(id);
    if (status === 'succeeded' || row.kind !== 'import') await this.forgetSeen(row.workspace_id, id);
  }

  /** Which of `ids` the run has already seen listed. */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.UUID, 'post', [Sample.UUID]] })
  async seen(workspaceId: WorkspaceId, runId: string, resource: SweepResource, ids: string[]): Promise<Set<string>> {
    // One probe of the primary key per id, whatever the statistics say: a LATERAL subquery with a LIMIT is never
    // turned into a join. The planner takes a new run for an empty one, so as `id = ANY(ids)` or as a join it read
    // every id the run had seen (to filter or hash them): a page's lookup grew with the run, an import's with the
    // square of the workspace.
    const rows = await this.database.db
      .selectFrom(sql<{ id: string }>`unnest(${ids}::text[])`.as<'listed'>(sql`listed(id)`))
      .innerJoinLateral(
        (eb) =>
          eb
            .selectFrom('sweep_seen as s')
            .select(eb.lit(1).as('one'))
            .where('s.workspace_id', '=', workspaceId)
            .where('s.run_id', '=', runId)
            .where('s.resource', '=', resource)
            .whereRef('s.id', '=', 'listed.id')
            .limit(1)
            .as('found'),
        (join) => join.onTrue(),
      )
      .select('listed.id')
      .execute();
    return new Set(rows.map((r) => r.id));
  }

  /**
   * A listed page of posts: which of `ids` the run has already seen listed (as `seen`), and the mirror's version of
   * each post it holds (PostMirrorRepository.versions), in one statement: a probe of each table's primary key per id,
   * LATERAL with a LIMIT for the reason `seen` gives.
   */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.UUID, 'post', [Sample.UUID]] })
  async seenAndMirrored(
    workspaceId: WorkspaceId,
    runId: string,
    resource: SweepResource,
    ids: string[],
  ): Promise<{ seen: Set<string>; mirrored: Map<string, PostVersion> }> {
    const rows = await this.database.db
      .selectFrom(sql<{ id: string }>`unnest(${ids}::text[])`.as<'listed'>(sql`listed(id)`))
      .leftJoinLateral(
        () => this.seenRow(workspaceId, runId, resource, sql.ref<string>('listed.id')).as('found'),
        (join) => join.onTrue(),
      )
      .leftJoinLateral(
        (eb) =>
          eb
            .selectFrom('post as p')
            // Whether `extra` is there, not its value (as PostMirrorRepository.versions).
            .select((eb) => ['p.id', 'p.pozy_updated_at', 'p.deleted_at', eb('p.extra', 'is not', null).as('whole')])
            .where('p.workspace_id', '=', workspaceId)
            .whereRef('p.id', '=', 'listed.id')
            .limit(1)
            .as('m'),
        (join) => join.onTrue(),
      )
      .select(['listed.id', 'found.one as seen', 'm.id as mirrored', 'm.pozy_updated_at', 'm.deleted_at', 'm.whole'])
      .where((eb) => eb.or([eb('found.one', 'is not', null), eb('m.id', 'is not', null)]))
      .execute();
    const seen = new Set<string>();
    const mirrored = new Map<string, PostVersion>();
    for (const r of rows) {
      if (r.seen !== null) seen.add(r.id);
      if (r.mirrored !== null) mirrored.set(r.id, { pozyUpdatedAt: r.pozy_updated_at, deleted: r.deleted_at !== null, whole: r.whole === true });
    }
    return { seen, mirrored };
  }

  /** How many posts the listing pass has seen (its pages committed so far). */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.UUID, Sample.NUMBER] })
  async seenInPass(workspaceId: WorkspaceId, runId: string, pass: number): Promise<number> {
    const { n } = await this.database.db
      .selectFrom('sweep_seen')
      .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('run_id', '=', runId)
      .where('resource', '=', postsSeenIn(pass))
      .executeTakeFirstOrThrow();
    return n;
  }

  /** Posts the listing pass saw that the mirror has since marked deleted (a webhook's read found them gone). */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.UUID, Sample.NUMBER] })
  async seenThenDeleted(workspaceId: WorkspaceId, runId: string, pass: number): Promise<number> {
    const { n } = await this.database.db
      .selectFrom('sweep_seen as s')
      .innerJoin('post as p', (join) => join.onRef('p.workspace_id', '=', 's.workspace_id').onRef('p.id', '=', 's.id'))
      .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
      .where('s.workspace_id', '=', workspaceId)
      .where('s.run_id', '=', runId)
      .where('s.resource', '=', postsSeenIn(pass))
      .where('p.deleted_at', 'is not', null)
      .executeTakeFirstOrThrow();
    return n;
  }

  /** The insert of what a page saw into `sweep_seen` (a CTE of the page's checkpoint: advance). */
  @GenerateSql({ none: 'a helper: its statement shows under advance' })
  private seenInsert(db: QueryCreator<DB>, workspaceId: WorkspaceId, runId: string, resource: SweepResource, ids: string[]) {
    return db
      .insertInto('sweep_seen')
      .columns(['workspace_id', 'run_id', 'resource', 'id'])
      .expression(
        db
          .selectFrom(sql<{ id: string }>`unnest(${ids}::text[])`.as<'listed'>(sql`listed(id)`))
          .select((eb) => [
            eb.val(workspaceId).as('workspace_id'),
            eb.cast<string>(eb.val(runId), 'uuid').as('run_id'),
            eb.cast<string>(eb.val(resource), 'text').as('resource'),
            'listed.id',
          ]),
      )
      .onConflict((oc) => oc.doNothing());
  }

  /**
   * The next chunk of the walk for posts the last listing pass did not see: its last id (null: the walk is over)
   * and the misses: the chunk's live rows the run has not seen listed, read from Pozy before the listing began (a
   * row read since is fresher than the listing).
   */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.UUID, Sample.NUMBER, null, Sample.DATE] })
  async missingPosts(
    workspaceId: WorkspaceId,
    runId: string,
    pass: number,
    cursor: string | null,
    listedFrom: Date,
  ): Promise<{ last: string | null; missing: string[] }> {
    const { last, missing } = await this.database.db
      .with('chunk', (db) =>
        db
          .selectFrom('post')
          .select(['id', 'deleted_at', 'read_started_at'])
          .where('workspace_id', '=', workspaceId)
          .where('id', '>', cursor ?? '')
          .orderBy('id')
          .limit(WALK_CHUNK),
      )
      .selectNoFrom((eb) => [
        eb
          .selectFrom('chunk')
          .select((eb) => eb.fn.max('id').as('last'))
          .$asScalar()
          .as('last'),
        eb
          .selectFrom('chunk as c')
          .leftJoinLateral(
            () => this.seenRow(workspaceId, runId, postsSeenIn(pass), sql.ref<string>('c.id')).as('seen'),
            (join) => join.onTrue(),
          )
          .select((eb) => eb.fn.agg<string[]>('array_agg', ['c.id']).orderBy('c.id').as('ids'))
          .where((eb) => eb.and([eb('c.deleted_at', 'is', null), eb('c.read_started_at', '<', listedFrom), eb('seen.one', 'is', null)]))
          .$asScalar()
          .as('missing'),
      ])
      .executeTakeFirstOrThrow();
    return { last, missing: missing ?? [] };
  }

  /** The same for accounts, each with its profile (a profile's list says whether it is gone). */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.UUID, null, Sample.DATE] })
  async missingAccounts(
    workspaceId: WorkspaceId,
    runId: string,
    cursor: string | null,
    listedFrom: Date,
  ): Promise<{ last: string | null; missing: Array<{ id: string; profileId: string }> }> {
    const chunk = await this.database.db
      .with('chunk', (db) =>
        db
          .selectFrom('account')
          .select(['id', 'profile_id', 'removed_at', 'read_started_at'])
          .where('workspace_id', '=', workspaceId)
          .where('id', '>', cursor ?? '')
          .orderBy('id')
          .limit(WALK_CHUNK),
      )
      .with('missing', (db) =>
        db
          .selectFrom('chunk as c')
          .leftJoinLateral(
            () => this.seenRow(workspaceId, runId, 'account', sql.ref<string>('c.id')).as('seen'),
            (join) => join.onTrue(),
          )
          .select(['c.id', 'c.profile_id'])
          .where((eb) => eb.and([eb('c.removed_at', 'is', null), eb('c.read_started_at', '<', listedFrom), eb('seen.one', 'is', null)])),
      )
      .selectNoFrom((eb) => [
        eb
          .selectFrom('chunk')
          .select((eb) => eb.fn.max('id').as('last'))
          .$asScalar()
          .as('last'),
        eb
          .selectFrom('missing')
          .select((eb) => eb.fn.agg<string[]>('array_agg', ['id']).orderBy('id').as('ids'))
          .$asScalar()
          .as('ids'),
        eb
          .selectFrom('missing')
          .select((eb) => eb.fn.agg<string[]>('array_agg', ['profile_id']).orderBy('id').as('profiles'))
          .$asScalar()
          .as('profiles'),
      ])
      .executeTakeFirstOrThrow();
    const profiles = chunk.profiles ?? [];
    return { last: chunk.last, missing: (chunk.ids ?? []).map((id, i) => ({ id, profileId: profiles[i] })) };
  }

  /**
   * The run's `sweep_seen` row for `id` under `resource`, as a LATERAL subquery with a LIMIT: one probe of the primary
   * key per row of the walk, whatever the statistics say. As a NOT EXISTS it became an anti join that the planner,
   * with sweep_seen not analyzed since the run filled it, probed by the key's first three columns only, reading every
   * id the run had seen for each row: 3 s for a walk of 5,200 posts, against 30 ms so.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private seenRow(workspaceId: WorkspaceId, runId: string, resource: SweepResource, id: Expression<string>) {
    return this.database.db
      .selectFrom('sweep_seen as s')
      .select((eb) => eb.lit(1).as('one'))
      .where('s.workspace_id', '=', workspaceId)
      .where('s.run_id', '=', runId)
      .where('s.resource', '=', resource)
      .where('s.id', '=', id)
      .limit(1);
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async forgetSeen(workspaceId: WorkspaceId, runId: string): Promise<void> {
    await this.database.db.deleteFrom('sweep_seen').where('workspace_id', '=', workspaceId).where('run_id', '=', runId).execute();
  }
}
