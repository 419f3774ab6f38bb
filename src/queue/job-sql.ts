import type { TaskName, TaskPayload } from './tasks';

export interface JobSpec<N extends TaskName = TaskName> {
  task: N;
  payload: TaskPayload<N>;
  /** One pending job per key; adding another with the same key updates the pending one instead. */
  jobKey?: string;
  /** Delay before the job may run. */
  runAfterMs?: number;
  maxAttempts?: number;
}

/**
 * Adds a batch of jobs with `graphile_worker.add_jobs` in one statement. graphile-worker NOTIFYs once per call,
 * and a NOTIFY serialises commits database-wide, so callers batch rather than add per event.
 * `$1` is the specs as JSON, `$2` whether an existing pending job keeps its run_at.
 */
export const ADD_JOBS_SQL = `
SELECT j.id::text AS id, j.key
  FROM graphile_worker.add_jobs(
    ARRAY(
      SELECT ROW(s.task, s.payload, NULL, now() + s.run_after_ms * interval '1 millisecond', s.max_attempts,
                 s.job_key, NULL, NULL)::graphile_worker.job_spec
        FROM json_to_recordset($1::json) AS s(task text, payload json, run_after_ms int, max_attempts smallint, job_key text)
    ),
    $2::boolean
  ) AS j`;

export function addJobsParams(specs: readonly JobSpec[], preserveRunAt: boolean): unknown[] {
  const rows = specs.map((spec) => ({
    task: spec.task,
    payload: spec.payload,
    run_after_ms: spec.runAfterMs ?? 0,
    max_attempts: spec.maxAttempts ?? 25,
    job_key: spec.jobKey ?? null,
  }));
  return [JSON.stringify(rows), preserveRunAt];
}
