import type { CallHandler, ExecutionContext } from '@nestjs/common';
import { defer, lastValueFrom } from 'rxjs';
import { ApiError } from '../common/api-error';
import type { Db } from './database.service';
import type { ReadReplica, ReadTarget } from './read-replica.service';
import { ReplicaReadInterceptor } from './replica-read';

const replicaDb = { name: 'replica' } as unknown as Db;
const primaryDb = { name: 'primary' } as unknown as Db;

/** A ReadReplica that is configured and available, lagging 42 ms; `readFailed` as the real one decides for these. */
function fakeReplica(): ReadReplica & { failures: unknown[] } {
  const failures: unknown[] = [];
  return {
    failures,
    configured: true,
    target: (consistency: string): ReadTarget =>
      consistency === 'strong' ? { db: primaryDb, fromReplica: false } : { db: replicaDb, fromReplica: true },
    primary: (): ReadTarget => ({ db: primaryDb, fromReplica: false }),
    lagMs: () => 42,
    readFailed: (error: unknown) => {
      failures.push(error);
      return (error as { code?: string }).code === 'ECONNREFUSED';
    },
  } as unknown as ReadReplica & { failures: unknown[] };
}

/** No DATABASE_READ_URL: every read is the primary's. */
function noReplica(): ReadReplica & { failures: unknown[] } {
  return { ...fakeReplica(), configured: false, target: () => ({ db: primaryDb, fromReplica: false }) } as unknown as ReadReplica & {
    failures: unknown[];
  };
}

/** Runs the interceptor around `handler`, which reads through the Db the request was given (as @ReadDb() does). */
async function intercept(query: Record<string, string>, handler: (db: Db) => Promise<unknown>, replica = fakeReplica()) {
  const request: Record<string | symbol, unknown> = { query };
  const headers: Record<string, string> = {};
  const reply = { header: (name: string, value: string) => (headers[name] = value) };
  const context = { switchToHttp: () => ({ getRequest: () => request, getResponse: () => reply }) } as unknown as ExecutionContext;
  const readTarget = () => Object.getOwnPropertySymbols(request).map((key) => request[key] as ReadTarget)[0];
  const dbs: Db[] = [];
  const next: CallHandler = {
    handle: () =>
      defer(() => {
        dbs.push(readTarget().db);
        return handler(readTarget().db);
      }),
  };
  const outcome = await lastValueFrom(new ReplicaReadInterceptor(replica).intercept(context, next)).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return { outcome, headers, dbs, replica };
}

describe('ReplicaReadInterceptor', () => {
  it('reads the replica by default and says how far behind it is', async () => {
    const { outcome, headers, dbs } = await intercept({}, async () => 'rows');
    expect(outcome).toEqual({ value: 'rows' });
    expect(dbs).toEqual([replicaDb]);
    expect(headers).toEqual({ 'X-Replica-Lag-Ms': '42' });
  });

  it('reads the primary for consistency=strong, without the header', async () => {
    const { outcome, headers, dbs } = await intercept({ consistency: 'strong' }, async () => 'rows');
    expect(outcome).toEqual({ value: 'rows' });
    expect(dbs).toEqual([primaryDb]);
    expect(headers).toEqual({});
  });

  it('runs a read the replica could not serve again on the primary, whose answer carries no header', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5433'), { code: 'ECONNREFUSED' });
    const { outcome, headers, dbs, replica } = await intercept({}, async (db) => {
      if (db === replicaDb) throw refused;
      return 'from the primary';
    });
    expect(outcome).toEqual({ value: 'from the primary' });
    expect(dbs).toEqual([replicaDb, primaryDb]);
    expect(replica.failures).toEqual([refused]);
    expect(headers).toEqual({});
  });

  it('lets other failures through, with the header on a 404 read from the replica but not on a 400', async () => {
    const notFound = new ApiError('not_found', 'Post x is not in the mirror');
    const missing = await intercept({}, async () => Promise.reject(notFound));
    expect(missing.outcome).toEqual({ error: notFound });
    expect(missing.dbs).toEqual([replicaDb]);
    expect(missing.headers).toEqual({ 'X-Replica-Lag-Ms': '42' });

    const bad = new ApiError('invalid_request', 'Invalid request: consistency: ...');
    const refused = await intercept({ consistency: 'always' }, async () => Promise.reject(bad));
    expect(refused.outcome).toEqual({ error: bad });
    expect(refused.headers).toEqual({});
  });

  it('answers a read cut by the statement timeout, or that found no connection free, with a 503 and Retry-After', async () => {
    const timedOut = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    const cut = await intercept({ consistency: 'strong' }, async () => Promise.reject(timedOut));
    expect(cut.outcome).toEqual({ error: expect.objectContaining({ status: 503, code: 'query_timeout', retryAfterS: 5 }) });
    // Not the replica's fault: the same statement would run as long on the primary.
    const onReplica = await intercept({}, async () => Promise.reject(timedOut));
    expect(onReplica.dbs).toEqual([replicaDb]);
    expect(onReplica.outcome).toEqual({ error: expect.objectContaining({ status: 503, code: 'query_timeout' }) });
    expect(onReplica.headers).toEqual({ 'X-Replica-Lag-Ms': '42' });

    // No connection in time: the pool stayed full, a new connection took too long to open, or PostgreSQL had none to give.
    for (const noConnection of [
      new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated due to connection timeout'),
      Object.assign(new Error('sorry, too many clients already'), { code: '53300' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
    ]) {
      const busy = await intercept({ consistency: 'strong' }, async () => Promise.reject(noConnection));
      expect({ error: noConnection.message, outcome: busy.outcome }).toEqual({
        error: noConnection.message,
        outcome: { error: expect.objectContaining({ status: 503, code: 'overloaded', retryAfterS: 1 }) },
      });
    }

    // An operator's cancel (the same SQLSTATE, another message) is no timeout of ours.
    const cancelled = Object.assign(new Error('canceling statement due to user request'), { code: '57014' });
    expect((await intercept({ consistency: 'strong' }, async () => Promise.reject(cancelled))).outcome).toEqual({ error: cancelled });
  });

  it('without a replica reads the primary, stamps no lag, retries nothing, and still answers the refusals', async () => {
    const read = await intercept({}, async () => 'rows', noReplica());
    expect(read.outcome).toEqual({ value: 'rows' });
    expect(read.dbs).toEqual([primaryDb]);
    expect(read.headers).toEqual({});

    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const failed = await intercept({}, async () => Promise.reject(refused), noReplica());
    expect(failed.outcome).toEqual({ error: refused });
    expect(failed.dbs).toEqual([primaryDb]);
    expect(failed.replica.failures).toEqual([]);

    const timedOut = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    const cut = await intercept({}, async () => Promise.reject(timedOut), noReplica());
    expect(cut.outcome).toEqual({ error: expect.objectContaining({ status: 503, code: 'query_timeout', retryAfterS: 5 }) });
    expect(cut.headers).toEqual({});
  });
});
