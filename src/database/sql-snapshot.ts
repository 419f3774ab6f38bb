/**
 * What `npm run sql:snapshots` renders into src/queries/: each repository method's statements, as PostgreSQL gets
 * them, so that a changed query shows in review as changed SQL. Every method of a repository class carries
 * `@GenerateSql`: sample arguments to call it with (one snapshot per sample), or `{ none: why }` for a method that
 * sends no statement of its own; test/sql-snapshots.e2e-spec.ts fails when a method lacks it or a snapshot is stale.
 */
export type SqlSample =
  /** Arguments the method is called with; `name` tells two samples of one method apart. */
  | {
      params: readonly unknown[];
      name?: string;
      /** The rows each statement answers, in order (none when not given): to reach the statements that depend on them. */
      answers?: readonly (readonly object[])[];
    }
  /** Why the method sends no statement of its own (it calls another method, or only reads what another returned). */
  | { none: string };

/** Per repository class, per method, its samples, in declaration order. */
export const SQL_SAMPLES = new Map<abstract new (...args: never[]) => unknown, Map<string, SqlSample[]>>();

/** Marks a repository method for the SQL snapshots (see above). Several decorators give several samples. */
export function GenerateSql(...samples: SqlSample[]): MethodDecorator {
  return (target, method) => {
    const owner = target.constructor as abstract new (...args: never[]) => unknown;
    const methods = SQL_SAMPLES.get(owner) ?? new Map<string, SqlSample[]>();
    SQL_SAMPLES.set(owner, methods);
    methods.set(String(method), [...(samples.length ? samples : [{ params: [] }]), ...(methods.get(String(method)) ?? [])]);
  };
}

/** Sample values for `@GenerateSql` arguments, fixed so that the snapshots render the same every time. */
export const Sample = {
  /** Stands for the recording `Db` (for a method that takes its caller's `db` or transaction). */
  DB: Symbol('the recording database'),
  UUID: '00000000-0000-4000-8000-000000000000',
  WORKSPACE: 'default',
  STRING: 'abc',
  DATE: new Date('2026-01-01T00:00:00.000Z'),
  NUMBER: 10,
  /** One read of Pozy (a post's; a profile's adds its per-account event times). */
  READ: { readId: '00000000-0000-4000-8000-000000000001', startedAt: new Date('2026-01-01T00:00:00.000Z'), lastEventAt: null },
  /** A post as Pozy answers it. */
  POST: {
    _id: 'abc',
    status: 'published',
    content: 'abc',
    publishedAt: '2026-01-01T00:00:00.000Z',
    platforms: [{ platform: 'x', accountId: 'abc', status: 'published', platformPostId: 'abc', publishedAt: '2026-01-01T00:00:00.000Z' }],
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  },
  /** An account as Pozy answers it. */
  ACCOUNT: { _id: 'abc', platform: 'x', profileId: 'abc', username: 'abc', displayName: 'abc', isActive: true },
  /** A webhook event as the receiver hands it to the receive statement. */
  EVENT: {
    workspaceId: 'default',
    id: 'abc',
    type: 'post.updated',
    payloadJson: '{}',
    timestamp: new Date('2026-01-01T00:00:00.000Z'),
    deliveryId: 'abc',
    attempt: 1,
    test: false,
    reconcile: { key: 'post:abc', type: 'post', id: 'abc' },
    recoveredBy: null,
    traceParent: null,
  },
} as const;
