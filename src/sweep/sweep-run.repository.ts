import { Injectable } from '@nestjs/common';
import { DatabaseService, Queryable } from '../database/database.service';

export const RUN_KINDS = ['import', 'sweep'] as const;
export type RunKind = (typeof RUN_KINDS)[number];
export type RunTrigger = 'auto' | 'admin' | 'schedule';
export type RunStatus = 'running' | 'succeeded' | 'failed';
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
  /** Starts the next listing pass of the posts from the beginning. */
  nextPass?: true;
  postsOffset?: number;
  accountsListedFrom?: Date;
  postsListedFrom?: Date;
  /** Set with a phase change too: null starts the next walk from the beginning. */
  missingCursor?: string | null;
  accountsTotal?: number;
  postsTotal?: number;
  accountsDone?: number;
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

const COLUMNS = `id, kind, trigger, dry_run, status, phase, owner, started_at, resumed_at, posts_done_at_resume, finished_at,
  pass, posts_offset, accounts_listed_from, posts_listed_from, missing_cursor, accounts_total, posts_total, accounts_done,
  posts_done, pages_read, posts_created, posts_changed, posts_deleted, posts_unchanged, accounts_created,
  accounts_changed, accounts_deleted, accounts_unchanged, last_error, error, now() AS read_at`;

interface Row {
  id: string;
  kind: RunKind;
  trigger: RunTrigger;
  dry_run: boolean;
  status: RunStatus;
  phase: RunPhase;
  owner: string | null;
  started_at: Date;
  resumed_at: Date;
  posts_done_at_resume: number;
  finished_at: Date | null;
  pass: number;
  posts_offset: number;
  accounts_listed_from: Date | null;
  posts_listed_from: Date | null;
  missing_cursor: string | null;
  accounts_total: number | null;
  posts_total: number | null;
  accounts_done: number;
  posts_done: number;
  pages_read: number;
  posts_created: number;
  posts_changed: number;
  posts_deleted: number;
  posts_unchanged: number;
  accounts_created: number;
  accounts_changed: number;
  accounts_deleted: number;
  accounts_unchanged: number;
  last_error: string | null;
  error: string | null;
  read_at: Date;
}

function toRun(r: Row): SweepRun {
  return {
    id: r.id,
    kind: r.kind,
    trigger: r.trigger,
    dryRun: r.dry_run,
    status: r.status,
    phase: r.phase,
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

// A chunk of the mirror in id order, and those of its live rows the run has not seen listed, read from Pozy before
// the listing began (a row read since is fresher than the listing). $1 run, $2 cursor ('' from the start), $3 the
// listing's start, $4 the chunk's size, $5 the listing's sweep_seen tag.
const MISSING_POSTS = `
WITH chunk AS (SELECT id, deleted_at, read_started_at FROM post WHERE id > $2 ORDER BY id LIMIT $4)
SELECT (SELECT max(id) FROM chunk) AS last,
       coalesce((SELECT array_agg(c.id ORDER BY c.id) FROM chunk c
                  WHERE c.deleted_at IS NULL AND c.read_started_at < $3
                    AND NOT EXISTS (SELECT 1 FROM sweep_seen s WHERE s.run_id = $1 AND s.resource = $5 AND s.id = c.id)),
                '{}') AS missing`;

const MISSING_ACCOUNTS = `
WITH chunk AS (SELECT id, profile_id, removed_at, read_started_at FROM account WHERE id > $2 ORDER BY id LIMIT $4)
SELECT (SELECT max(id) FROM chunk) AS last,
       coalesce((SELECT array_agg(c.profile_id || ':' || c.id ORDER BY c.id) FROM chunk c
                  WHERE c.removed_at IS NULL AND c.read_started_at < $3
                    AND NOT EXISTS (SELECT 1 FROM sweep_seen s WHERE s.run_id = $1 AND s.resource = 'account' AND s.id = c.id)),
                '{}') AS missing`;

/** The runs (`sweep_run`) and what each has seen listed (`sweep_seen`). */
@Injectable()
export class SweepRunRepository {
  constructor(private readonly database: DatabaseService) {}

  async create(run: Pick<SweepRun, 'id' | 'kind' | 'trigger' | 'dryRun' | 'owner'>): Promise<SweepRun> {
    const { rows } = await this.database.pool.query<Row>(
      `INSERT INTO sweep_run (id, kind, trigger, dry_run, status, phase, owner) VALUES ($1, $2, $3, $4, 'running', 'accounts', $5)
       RETURNING ${COLUMNS}`,
      [run.id, run.kind, run.trigger, run.dryRun, run.owner],
    );
    return toRun(rows[0]);
  }

  async get(id: string): Promise<SweepRun | undefined> {
    const { rows } = await this.database.pool.query<Row>(`SELECT ${COLUMNS} FROM sweep_run WHERE id = $1`, [id]);
    return rows[0] && toRun(rows[0]);
  }

  /** The run in progress, if any: at most one runs at a time. */
  async running(): Promise<SweepRun | undefined> {
    const { rows } = await this.database.pool.query<Row>(
      `SELECT ${COLUMNS} FROM sweep_run WHERE status = 'running' ORDER BY started_at DESC LIMIT 1`,
    );
    return rows[0] && toRun(rows[0]);
  }

  async latest(kind: RunKind): Promise<SweepRun | undefined> {
    const { rows } = await this.database.pool.query<Row>(
      `SELECT ${COLUMNS} FROM sweep_run WHERE kind = $1 ORDER BY started_at DESC LIMIT 1`,
      [kind],
    );
    return rows[0] && toRun(rows[0]);
  }

  /** Whether a run has ever listed the whole workspace into the mirror (an import, or a full sweep that wrote). */
  async completedOnce(): Promise<boolean> {
    const { rowCount } = await this.database.pool.query(`SELECT 1 FROM sweep_run WHERE status = 'succeeded' AND NOT dry_run LIMIT 1`);
    return (rowCount ?? 0) > 0;
  }

  /** Takes the run over (a resume): from now on only `owner` writes its checkpoint. */
  async claim(id: string, owner: string): Promise<SweepRun> {
    const { rows } = await this.database.pool.query<Row>(
      `UPDATE sweep_run SET owner = $2, status = 'running', error = NULL, finished_at = NULL, resumed_at = now(),
              posts_done_at_resume = posts_done
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, owner],
    );
    if (!rows[0]) throw new Error(`No run ${id}`);
    return toRun(rows[0]);
  }

  /** Writes a page's progress and checkpoint inside the page's transaction; throws LostRunError if not the owner. */
  async advance(client: Queryable, id: string, owner: string, p: RunProgress): Promise<void> {
    const { rowCount } = await client.query(
      `UPDATE sweep_run SET
          phase = coalesce($3, phase), posts_offset = coalesce($4, posts_offset),
          accounts_listed_from = coalesce(accounts_listed_from, $5), posts_listed_from = coalesce(posts_listed_from, $6),
          missing_cursor = CASE WHEN $7 THEN $8 ELSE missing_cursor END,
          accounts_total = coalesce($9, accounts_total), posts_total = coalesce($10, posts_total),
          accounts_done = accounts_done + $11, posts_done = posts_done + $12, pages_read = pages_read + $13,
          posts_created = posts_created + $14, posts_changed = posts_changed + $15,
          posts_deleted = posts_deleted + $16, posts_unchanged = posts_unchanged + $17,
          accounts_created = accounts_created + $18, accounts_changed = accounts_changed + $19,
          accounts_deleted = accounts_deleted + $20, accounts_unchanged = accounts_unchanged + $21,
          last_error = NULL
        WHERE id = $1 AND owner = $2 AND status = 'running'`,
      [
        id,
        owner,
        p.phase ?? null,
        p.postsOffset ?? null,
        p.accountsListedFrom ?? null,
        p.postsListedFrom ?? null,
        p.missingCursor !== undefined,
        p.missingCursor ?? null,
        p.accountsTotal ?? null,
        p.postsTotal ?? null,
        p.accountsDone ?? 0,
        p.postsDone ?? 0,
        p.pagesRead ?? 0,
        p.posts?.created ?? 0,
        p.posts?.changed ?? 0,
        p.posts?.deleted ?? 0,
        p.posts?.unchanged ?? 0,
        p.accounts?.created ?? 0,
        p.accounts?.changed ?? 0,
        p.accounts?.deleted ?? 0,
        p.accounts?.unchanged ?? 0,
      ],
    );
    if (rowCount !== 1) throw new LostRunError(id);
    if (p.nextPass) {
      await client.query(
        `UPDATE sweep_run SET pass = pass + 1, posts_offset = 0, posts_done = 0, posts_done_at_resume = 0,
                posts_listed_from = NULL, posts_total = NULL, resumed_at = now()
          WHERE id = $1`,
        [id],
      );
    }
  }

  /** A transient failure the run is waiting out (null: past it). */
  async noteError(id: string, owner: string, message: string | null): Promise<void> {
    await this.database.pool.query(`UPDATE sweep_run SET last_error = $3 WHERE id = $1 AND owner = $2`, [id, owner, message]);
  }

  /** Stopped, not finished: the run stays `running` with no owner, for whichever replica resumes it. */
  async release(id: string, owner: string): Promise<void> {
    await this.database.pool.query(`UPDATE sweep_run SET owner = NULL WHERE id = $1 AND owner = $2`, [id, owner]);
  }

  /**
   * Ends the run. What it saw is forgotten, except by a failed import: that one is resumed from its checkpoint,
   * and needs it.
   */
  async finish(id: string, owner: string, status: 'succeeded' | 'failed', error: string | null): Promise<void> {
    const { rows } = await this.database.pool.query<{ kind: RunKind }>(
      `UPDATE sweep_run SET status = $3, error = $4, phase = CASE WHEN $3 = 'succeeded' THEN 'done' ELSE phase END,
              finished_at = now(), owner = NULL
        WHERE id = $1 AND owner = $2 RETURNING kind`,
      [id, owner, status, error],
    );
    if (!rows[0]) throw new LostRunError(id);
    if (status === 'succeeded' || rows[0].kind !== 'import') await this.forgetSeen(id);
  }

  /** Which of `ids` the run has already seen listed. */
  async seen(runId: string, resource: SweepResource, ids: string[]): Promise<Set<string>> {
    const { rows } = await this.database.pool.query<{ id: string }>(
      `SELECT id FROM sweep_seen WHERE run_id = $1 AND resource = $2 AND id = ANY($3::text[])`,
      [runId, resource, ids],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Posts the listing pass saw that the mirror has since marked deleted (a webhook's read found them gone). */
  async seenThenDeleted(runId: string, pass: number): Promise<number> {
    const { rows } = await this.database.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM sweep_seen s JOIN post p ON p.id = s.id
        WHERE s.run_id = $1 AND s.resource = $2 AND p.deleted_at IS NOT NULL`,
      [runId, postsSeenIn(pass)],
    );
    return rows[0].n;
  }

  async markSeen(client: Queryable, runId: string, resource: SweepResource, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await client.query(
      `INSERT INTO sweep_seen (run_id, resource, id) SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING`,
      [runId, resource, ids],
    );
  }

  /**
   * The next chunk of the walk for posts the last listing pass did not see: its last id (null: the walk is over)
   * and the misses.
   */
  async missingPosts(runId: string, pass: number, cursor: string | null, listedFrom: Date): Promise<{ last: string | null; missing: string[] }> {
    const { rows } = await this.database.pool.query<{ last: string | null; missing: string[] }>(MISSING_POSTS, [
      runId,
      cursor ?? '',
      listedFrom,
      WALK_CHUNK,
      postsSeenIn(pass),
    ]);
    return rows[0];
  }

  /** The same for accounts, each with its profile (a profile's list says whether it is gone). */
  async missingAccounts(
    runId: string,
    cursor: string | null,
    listedFrom: Date,
  ): Promise<{ last: string | null; missing: Array<{ id: string; profileId: string }> }> {
    const { rows } = await this.database.pool.query<{ last: string | null; missing: string[] }>(MISSING_ACCOUNTS, [
      runId,
      cursor ?? '',
      listedFrom,
      WALK_CHUNK,
    ]);
    return {
      last: rows[0].last,
      missing: rows[0].missing.map((pair) => {
        const at = pair.indexOf(':');
        return { profileId: pair.slice(0, at), id: pair.slice(at + 1) };
      }),
    };
  }

  private async forgetSeen(runId: string): Promise<void> {
    await this.database.pool.query(`DELETE FROM sweep_seen WHERE run_id = $1`, [runId]);
  }
}
