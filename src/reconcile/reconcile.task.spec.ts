import { Tracing } from '../tracing/tracing.service';
import { Logger } from '@nestjs/common';
import type { JobHelpers } from 'graphile-worker';
import type { AppConfig } from '../config/app-config';
import { PozyProtocolError, PozyUnavailableError } from '../pozy/pozy-errors';
import { ReconcileTask } from './reconcile.task';

const DEAD_LETTER_AFTER_MS = 60_000;
const FIRST_FAILURE = new Date('2026-11-30T12:00:00Z');

/**
 * The job over in-process collaborators: the reconcile either succeeds or throws `failure`; the request's failing
 * clock (markFailing) answers since when, and for how long, reads have timed out.
 */
function setup(failure?: Error, failingForMs = 0) {
  const calls: string[] = [];
  const deadLetters: Record<string, unknown>[] = [];
  const outcomes: unknown[] = [];
  const reconciler = {
    async reconcile() {
      if (failure) throw failure;
      return 'written';
    },
  };
  const requests = {
    async markFailing(workspace: string, key: string) {
      calls.push(`markFailing ${workspace}/${key}`);
      return { since: FIRST_FAILURE, forMs: failingForMs };
    },
    async clearFailing(workspace: string, key: string) {
      calls.push(`clearFailing ${workspace}/${key}`);
    },
  };
  const letters = {
    async addReconcile(letter: Record<string, unknown>) {
      deadLetters.push(letter);
      return 'letter-1';
    },
  };
  const config = { deadLetterAfterMs: DEAD_LETTER_AFTER_MS } as AppConfig;
  const metrics = { reconcileJobs: { inc: (labels: unknown) => outcomes.push(labels) } };
  type Args = ConstructorParameters<typeof ReconcileTask>;
  const task = new ReconcileTask(
    reconciler as unknown as Args[0],
    requests as unknown as Args[1],
    letters as unknown as Args[2],
    config,
    metrics as unknown as Args[4],
    // Traces off: the events' trace contexts are never read.
    {} as Args[5],
    Tracing.off(),
    { record: async () => undefined } as unknown as Args[7],
    { emit: async () => undefined } as unknown as Args[8],
  );
  const helpers = { job: { id: '42', attempts: 3 } } as unknown as JobHelpers;
  return { run: () => task.handle({ resource: 'post', id: 'p1' }, helpers), calls, deadLetters, outcomes };
}

const timeout = () => new PozyUnavailableError('GET /v1/posts/:id: UND_ERR_HEADERS_TIMEOUT (Headers Timeout Error)', true);
const serverError = () => new PozyUnavailableError('GET /v1/posts/:id: HTTP 503', false);

describe('ReconcileTask: when a reconcile ends in the delivery dead-letter queue', () => {
  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  it('completes a job that read, and clears its failing clock', async () => {
    const s = setup();

    await s.run();

    expect(s.calls).toEqual(['clearFailing default/post:p1']);
    expect(s.outcomes).toEqual([{ resource: 'post', outcome: 'written' }]);
    expect(s.deadLetters).toEqual([]);
  });

  it('lets graphile-worker retry a timeout that has not lasted over DEAD_LETTER_AFTER_MS', async () => {
    const error = timeout();
    const s = setup(error, DEAD_LETTER_AFTER_MS);

    await expect(s.run()).rejects.toBe(error);

    expect(s.calls).toEqual(['markFailing default/post:p1']);
    expect(s.deadLetters).toEqual([]);
    expect(s.outcomes).toEqual([{ resource: 'post', outcome: 'failed' }]);
  });

  it('dead-letters a timeout that has lasted over DEAD_LETTER_AFTER_MS, dated from the first failure, and ends the job', async () => {
    const s = setup(timeout(), DEAD_LETTER_AFTER_MS + 1);

    await expect(s.run()).resolves.toBeUndefined();

    expect(s.deadLetters).toEqual([
      {
        workspaceId: 'default',
        resourceKey: 'post:p1',
        payload: { resource: 'post', id: 'p1' },
        reason: 'Pozy timed out or was unreachable for over 60 s',
        error: expect.stringContaining('UND_ERR_HEADERS_TIMEOUT'),
        attempts: 3,
        firstFailureAt: FIRST_FAILURE,
      },
    ]);
    // The next failure of this resource starts a clock of its own.
    expect(s.calls).toEqual(['markFailing default/post:p1', 'clearFailing default/post:p1']);
    expect(s.outcomes).toEqual([{ resource: 'post', outcome: 'dead_lettered' }]);
  });

  it('dead-letters an answer retrying cannot change at once, without waiting for any clock', async () => {
    const s = setup(new PozyProtocolError('GET /v1/posts/:id: unexpected HTTP 403 {"error":"Forbidden"}', 403));
    const before = Date.now();

    await expect(s.run()).resolves.toBeUndefined();

    expect(s.deadLetters).toEqual([expect.objectContaining({ reason: 'Pozy answered something retrying cannot change', attempts: 3 })]);
    const firstFailureAt = (s.deadLetters[0].firstFailureAt as Date).getTime();
    expect(firstFailureAt).toBeGreaterThanOrEqual(before);
    expect(firstFailureAt).toBeLessThanOrEqual(Date.now());
    expect(s.calls).toEqual(['clearFailing default/post:p1']);
  });

  it('never dead-letters Pozy answering 5xx, however long: graphile-worker keeps retrying it', async () => {
    const error = serverError();
    const s = setup(error, 10 * DEAD_LETTER_AFTER_MS);

    await expect(s.run()).rejects.toBe(error);

    expect(s.calls).toEqual([]);
    expect(s.deadLetters).toEqual([]);
  });

  it('never dead-letters a failure of our own database: it is retried', async () => {
    const error = new Error('Connection terminated unexpectedly');
    const s = setup(error, 10 * DEAD_LETTER_AFTER_MS);

    await expect(s.run()).rejects.toBe(error);

    expect(s.calls).toEqual([]);
    expect(s.deadLetters).toEqual([]);
  });
});
