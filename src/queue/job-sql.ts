import type { TaskName, TaskPayload } from './tasks';

export interface JobSpec<N extends TaskName = TaskName> {
  task: N;
  payload: TaskPayload<N>;
  /** One pending job per key; adding another with the same key updates the pending one instead. */
  jobKey?: string;
}

/**
 * Adds a batch of jobs, to run now, with `graphile_worker.add_jobs` in one statement. graphile-worker NOTIFYs
 * once per call, and a NOTIFY serialises commits database-wide, so callers batch rather than add per event.
 * A pending job with the same key keeps its run time (`preserve_run_at`). `$1` is the specs as JSON.
 */
export const ADD_JOBS_SQL = `
SELECT count(*)::int AS added
  FROM graphile_worker.add_jobs(
    ARRAY(
      SELECT ROW(s.task, s.payload, NULL, NULL, NULL, s.job_key, NULL, NULL)::graphile_worker.job_spec
        FROM json_to_recordset($1::json) AS s(task text, payload json, job_key text)
    ),
    true
  )`;

export function addJobsParams(specs: readonly JobSpec[]): unknown[] {
  return [JSON.stringify(specs.map((spec) => ({ task: spec.task, payload: spec.payload, job_key: spec.jobKey ?? null })))];
}
