import { Client, ClientConfig, Pool, PoolClient, PoolConfig } from 'pg';
import type { DatabaseEndpoint, TargetSessionAttrs } from '../config/database-url';

/**
 * Why a connection was refused or dropped:
 * - `wrong_server`: the check at connect found a server the pool may not use (read-only or a standby for a pool that
 *   writes, as libpq's `target_session_attrs` does);
 * - `server_error`: it failed with a SQLSTATE saying its server shuts down, is in recovery or refuses writes;
 * - `connection_lost`: it failed with a connection error (class 08, or its socket);
 * - `failover`: the primary changed under it (PrimaryWatch), so it was discarded before its next use.
 */
export const DISCARD_CAUSES = ['wrong_server', 'server_error', 'connection_lost', 'failover'] as const;
export type DiscardCause = (typeof DISCARD_CAUSES)[number];

export interface ConnectionObserver {
  discarded(pool: string, cause: DiscardCause, detail: string): void;
}

/** What a server reported of itself at connect (PostgreSQL 14 and later report both without being asked). */
interface ServerRole {
  standby: boolean;
  readOnly: boolean;
}

/**
 * SQLSTATEs after which a connection is never used again: admin or crash shutdown (57P01, 57P02), a server starting
 * up or in recovery (57P03), a read-only transaction (25006: the server, or its default, refuses writes), and
 * class 08 (connection exception).
 */
const DOOMING = new Set(['57P01', '57P02', '57P03', '25006']);

export function doomingCode(code: unknown): DiscardCause | undefined {
  if (typeof code !== 'string') return undefined;
  if (code.startsWith('08')) return 'connection_lost';
  return DOOMING.has(code) ? 'server_error' : undefined;
}

/** A server the check at connect refused; reads as PostgreSQL's read-only SQLSTATE, so callers see a database refusal. */
export class WrongServerError extends Error {
  readonly code = '25006';

  constructor(
    readonly hostIndex: number,
    label: string,
    readonly role: ServerRole,
    wanted: TargetSessionAttrs,
  ) {
    super(`${label} is ${role.standby ? 'a standby' : role.readOnly ? 'read-only' : 'a primary'}, not ${wanted} (target_session_attrs)`);
    this.name = 'WrongServerError';
  }
}

/** Whether a server suits `wanted`; `prefer-standby` takes any once no standby answered (`relaxed`). */
function suits(role: ServerRole, wanted: TargetSessionAttrs, relaxed: boolean): boolean {
  switch (wanted) {
    case 'any':
      return true;
    case 'read-write':
      return !role.readOnly && !role.standby;
    case 'read-only':
      return role.readOnly || role.standby;
    case 'primary':
      return !role.standby;
    case 'standby':
      return role.standby;
    case 'prefer-standby':
      return role.standby || relaxed;
  }
}

/** How long `prefer-standby` stays on a primary after finding no standby, before it looks for one again. */
const PREFER_STANDBY_RETRY_MS = 30_000;

/** Which host new connections go to: the last that gave a suitable one (sticky, so a dead first host costs nothing). */
class HostCursor {
  index = 0;
  relaxedUntil = 0;

  constructor(readonly endpoint: DatabaseEndpoint) {}

  get relaxed(): boolean {
    return Date.now() < this.relaxedUntil;
  }

  /** After host `failed` did not give a suitable connection: the next one, unless another caller moved on already. */
  moveFrom(failed: number): void {
    if (this.index === failed) this.index = (failed + 1) % this.endpoint.connectionStrings.length;
  }
}

interface Marks {
  hostIndex: number;
  connectedAt: number;
  role?: ServerRole;
  /** Set once the connection must not be used again. */
  doomed?: { cause: DiscardCause; detail: string };
}

const MARKS = new WeakMap<Client, Marks>();

/** The client class a FailoverPool makes: connects to the cursor's host and remembers what the server says of itself. */
function clientClass(cursor: HostCursor): new (config?: ClientConfig) => Client {
  return class FailoverClient extends Client {
    constructor(config?: ClientConfig) {
      const hostIndex = cursor.index;
      super({ ...config, connectionString: cursor.endpoint.connectionStrings[hostIndex] });
      const marks: Marks = { hostIndex, connectedAt: Date.now() };
      MARKS.set(this, marks);
      const params = new Map<string, string>();
      const connection = this.connection;
      connection.on('parameterStatus', (msg: { parameterName: string; parameterValue: string }) => {
        params.set(msg.parameterName, msg.parameterValue);
        if (params.has('in_hot_standby') && params.has('default_transaction_read_only')) {
          marks.role = { standby: params.get('in_hot_standby') === 'on', readOnly: params.get('default_transaction_read_only') === 'on' };
        }
      });
      connection.on('errorMessage', (msg: { code?: string; message?: string }) => {
        const cause = doomingCode(msg.code);
        if (cause && !marks.doomed) marks.doomed = { cause, detail: `${msg.code ?? ''} ${msg.message ?? ''}`.trim() };
      });
    }

    /** A failed connect says which host it was for, so the pool moves on from that one. */
    override connect(): Promise<Client>;
    override connect(callback: (err: Error) => void): void;
    override connect(callback?: (err: Error) => void): Promise<Client> | void {
      const hostIndex = MARKS.get(this)?.hostIndex;
      const tag = (error: Error) => Object.assign(error, { hostIndex });
      if (!callback) {
        return super.connect().catch((error: Error) => {
          throw tag(error);
        });
      }
      super.connect((error: Error | null) => callback(error ? tag(error) : (error as unknown as Error)));
    }
  };
}

/** What the server is, from its reports at connect or (before PostgreSQL 14) from one query. */
async function serverRole(client: Client, marks: Marks): Promise<ServerRole> {
  if (marks.role) return marks.role;
  const { rows } = await client.query<{ standby: boolean; read_only: boolean }>(
    `SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') = 'on' AS read_only`,
  );
  marks.role = { standby: rows[0].standby, readOnly: rows[0].read_only };
  return marks.role;
}

/** A connect failure worth trying the next host for: the server is wrong, or could not be reached. */
function isConnectFailure(error: unknown): boolean {
  if (error instanceof WrongServerError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (/^E[A-Z]+$/.test(code) || doomingCode(code) !== undefined || code === '53300')) return true;
  return error instanceof Error && /Connection terminated|connection timeout/i.test(error.message);
}

export interface FailoverPoolConfig extends Omit<PoolConfig, 'connectionString' | 'Client' | 'onConnect'> {
  endpoint: DatabaseEndpoint;
  /** The pool's name in metrics and logs. */
  name: string;
  observer?: ConnectionObserver;
}

/**
 * A pg pool over libpq's multi-host endpoint that keeps only connections its `target_session_attrs` allows: each new
 * connection is checked once, from what PostgreSQL reports at startup (no round trip on 14 and later), and a wrong
 * or unreachable host makes the pool try the next one. A connection that failed with a SQLSTATE saying its server
 * cannot take writes any more, or with a connection error, is destroyed when released instead of going back to the
 * pool: Kysely and graphile-worker release without an error, which would keep it.
 */
export class FailoverPool extends Pool {
  readonly name: string;
  readonly endpoint: DatabaseEndpoint;
  private readonly cursor: HostCursor;
  private readonly observer: ConnectionObserver | undefined;
  private readonly live = new Set<Client>();

  constructor({ endpoint, name, observer, ...config }: FailoverPoolConfig) {
    const cursor = new HostCursor(endpoint);
    super({
      ...config,
      Client: clientClass(cursor),
      // pg-pool awaits this hook and drops the client if it rejects (its types say void).
      onConnect: ((client: Client) => this.check(client)) as unknown as PoolConfig['onConnect'],
    });
    this.name = name;
    this.endpoint = endpoint;
    this.cursor = cursor;
    this.observer = observer;
    // Every client has an error listener while in use too: a connection lost under a caller must not end the process.
    this.on('connect', (client) => {
      this.live.add(client);
      client.on('error', (error) => observer?.discarded(name, 'connection_lost', error.message));
    });
    // An idle client's failure (pg-pool removes it) is reported the same way.
    this.on('error', () => undefined);
    this.on('remove', (client) => this.live.delete(client));
  }

  private async check(client: Client): Promise<void> {
    const marks = MARKS.get(client);
    if (!marks || this.endpoint.targetSessionAttrs === 'any') return;
    const role = await serverRole(client, marks);
    if (suits(role, this.endpoint.targetSessionAttrs, this.cursor.relaxed)) return;
    const error = new WrongServerError(marks.hostIndex, this.hostLabel(marks.hostIndex), role, this.endpoint.targetSessionAttrs);
    this.observer?.discarded(this.name, 'wrong_server', error.message);
    throw error;
  }

  private hostLabel(index: number): string {
    const host = this.endpoint.hosts[index];
    return host ? `${host.host}${host.port === undefined ? '' : `:${host.port}`}` : this.endpoint.label;
  }

  override connect(): Promise<PoolClient>;
  override connect(callback: (err: Error | undefined, client: PoolClient | undefined, done: PoolClient['release']) => void): void;
  override connect(
    callback?: (err: Error | undefined, client: PoolClient | undefined, done: PoolClient['release']) => void,
  ): Promise<PoolClient> | void {
    const acquired = this.acquire();
    if (!callback) return acquired;
    acquired.then(
      (client) => callback(undefined, client, (release?: Error | boolean) => client.release(release)),
      (error: Error) => callback(error, undefined, () => undefined),
    );
  }

  /**
   * A checked connection: every host is tried once, in order from the last good one (twice for `prefer-standby`, the
   * second time taking a primary). A connection marked while idle is dropped here rather than handed out.
   */
  private async acquire(): Promise<PoolClient> {
    const hosts = this.endpoint.connectionStrings.length;
    const tries = this.endpoint.targetSessionAttrs === 'prefer-standby' ? 2 * hosts : hosts;
    let lastError: unknown;
    // A server that answered but may not be used says more than one that did not answer: that one is reported.
    let wrongServer: WrongServerError | undefined;
    for (let tried = 0; tried < tries;) {
      if (tried === hosts && this.endpoint.targetSessionAttrs === 'prefer-standby') this.cursor.relaxedUntil = Date.now() + PREFER_STANDBY_RETRY_MS;
      let client: PoolClient;
      try {
        client = await super.connect();
      } catch (error) {
        if (!isConnectFailure(error)) throw error;
        lastError = error;
        if (error instanceof WrongServerError) wrongServer = error;
        tried += 1;
        this.cursor.moveFrom(hostIndexOf(error) ?? this.cursor.index);
        continue;
      }
      const marks = MARKS.get(client);
      if (marks?.doomed) {
        // Marked while it sat idle: dropped, and the loop asks again (each such client is gone, so this ends).
        this.observer?.discarded(this.name, marks.doomed.cause, marks.doomed.detail);
        client.release(new Error(marks.doomed.detail));
        continue;
      }
      this.guardRelease(client, marks);
      return client;
    }
    // 08001 (unable to establish a connection): what callers tell a database that is away from a statement's fault.
    throw (
      wrongServer ??
      (lastError instanceof Error ? lastError : Object.assign(new Error(`No suitable connection from ${this.endpoint.label}`), { code: '08001' }))
    );
  }

  /** Releasing a connection that failed in a way that dooms it destroys it, whatever the caller passed. */
  private guardRelease(client: PoolClient, marks: Marks | undefined): void {
    if (!marks) return;
    const release = client.release.bind(client);
    client.release = (destroy?: Error | boolean) => {
      if (marks.doomed && !destroy) {
        this.observer?.discarded(this.name, marks.doomed.cause, marks.doomed.detail);
        return release(new Error(marks.doomed.detail));
      }
      return release(destroy);
    };
  }

  /** Marks every connection made before `before` (ms) for discarding: idle ones at their next checkout, busy ones on release. */
  discardOlderThan(before: number, detail: string): number {
    let marked = 0;
    for (const client of this.live) {
      const marks = MARKS.get(client);
      if (marks && marks.connectedAt < before && !marks.doomed) {
        marks.doomed = { cause: 'failover', detail };
        marked += 1;
      }
    }
    return marked;
  }
}

/** The host a failed connect was for (pg-pool wraps a connect timeout's error in another, as its cause). */
function hostIndexOf(error: unknown): number | undefined {
  const tagged = error as { hostIndex?: number; cause?: { hostIndex?: number } } | null;
  return tagged?.hostIndex ?? tagged?.cause?.hostIndex;
}

/**
 * One standalone client (a LISTEN connection) held to the same rules as a FailoverPool's: tried host by host from
 * the first, kept only on a suitable server. The caller ends it; its errors are its own to handle.
 */
export async function connectClient(endpoint: DatabaseEndpoint, config: Omit<ClientConfig, 'connectionString'>): Promise<Client> {
  const cursor = new HostCursor(endpoint);
  const Checked = clientClass(cursor);
  let lastError: unknown;
  for (let i = 0; i < endpoint.connectionStrings.length; i += 1) {
    cursor.index = i;
    const client = new Checked(config);
    client.on('error', () => undefined);
    try {
      await client.connect();
      const marks = MARKS.get(client) as Marks;
      const role = await serverRole(client, marks);
      if (!suits(role, endpoint.targetSessionAttrs === 'prefer-standby' ? 'any' : endpoint.targetSessionAttrs, true)) {
        throw new WrongServerError(i, endpoint.label, role, endpoint.targetSessionAttrs);
      }
      client.removeAllListeners('error');
      return client;
    } catch (error) {
      lastError = error;
      await client.end().catch(() => undefined);
    }
  }
  throw lastError;
}
