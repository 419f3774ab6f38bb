import type { TaskName, TaskPayload } from './tasks';

export interface JobSpec<N extends TaskName = TaskName> {
  task: N;
  payload: TaskPayload<N>;
  /** One pending job per key; a second add before it runs updates it instead of adding another. */
  jobKey?: string;
  /** Delay before the job may run: the coalescing window. */
  runAfterMs?: number;
  maxAttempts?: number;
}

/**
 * The `graphile_worker.add_job` call, as SQL taking five parameters from $first on, so that it can be part of a
 * larger statement (the ingest insert) and commit or roll back with it. `preserve_run_at` keeps a steady stream
 * of events for one resource from postponing its job forever.
 */
export function addJobCall(first: number): string {
  const p = (offset: number) => `$${first + offset}`;
  return (
    `graphile_worker.add_job(${p(0)}::text, payload => ${p(1)}::json, job_key => ${p(2)}::text, ` +
    `run_at => now() + ${p(3)}::int * interval '1 millisecond', max_attempts => ${p(4)}::int, ` +
    `job_key_mode => 'preserve_run_at')`
  );
}

export function addJobParams(spec: JobSpec): unknown[] {
  return [spec.task, JSON.stringify(spec.payload), spec.jobKey ?? null, spec.runAfterMs ?? 0, spec.maxAttempts ?? 25];
}
