import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { WakeableLoop } from '../common/wakeable-loop';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { ConnectionMonitor } from './connection-monitor';
import { FailoverPool, WrongServerError } from './failover-pool';

/** Whether a server that takes writes is reachable through DATABASE_URL now. */
export type PrimaryState = 'writable' | 'read_only' | 'unreachable';

/** One PostgreSQL server as the primary: where it listens and when its postmaster started. */
export interface PrimaryServer {
  address: string;
  startedAt: string;
}

/** A writable primary found again: another server (a failover), the same one restarted, or the same one reached again. */
export interface PrimaryChange {
  kind: 'failover' | 'restart' | 'reconnect';
  at: Date;
  from: PrimaryServer | null;
  to: PrimaryServer;
  /** How long no writable primary was seen before it (0 when it came between two looks). */
  withoutPrimaryMs: number;
}

/** How often the primary is looked at while it takes writes, and while none does. */
const HEALTHY_EVERY_MS = 1_000;
const LOOKING_EVERY_MS = 250;
const PROBE_TIMEOUT_MS = 2_000;
/** Looks in a row that found nothing before an unreachable primary is believed (one slow answer on a busy machine is not an outage). */
const UNREACHABLE_AFTER = 2;

const PROBE = `SELECT coalesce(host(inet_server_addr()), 'local') || ':' || coalesce(inet_server_port(), current_setting('port')::int) AS address,
  pg_postmaster_start_time()::text AS started_at, pg_is_in_recovery() AS standby, current_setting('transaction_read_only') = 'on' AS read_only`;

/**
 * Watches DATABASE_URL for a server that takes writes, on a connection of its own held to the same check as every
 * pool: once a second while one does, four times a second while none does, and at once when a pool discards a
 * connection. Readiness, the spool, the worker and the runs listen: the moment a writable primary is back, what
 * waited for it goes (`onWritable`). A primary that is another server than before (a failover) or the same one
 * restarted is counted, and every pool's older connections are discarded before their next use.
 */
@Injectable()
export class PrimaryWatch implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(PrimaryWatch.name);
  private readonly pool: FailoverPool;
  private readonly loop: WakeableLoop;
  private readonly writableListeners: Array<(change: PrimaryChange) => void> = [];
  private readonly changes: Counter<'kind'>;
  private readonly outageSeconds: Counter;
  private current: PrimaryState = 'writable';
  private reason: string | undefined;
  /** When the current state began (ms). */
  private since = Date.now();
  private server: PrimaryServer | null = null;
  private last: PrimaryChange | null = null;
  private counted = { failover: 0, restart: 0, reconnect: 0 };
  private withoutPrimaryTotalMs = 0;
  private failedLooks = 0;
  private lastLookAt = 0;

  constructor(
    config: AppConfig,
    private readonly monitor: ConnectionMonitor,
    metrics: MetricsService,
  ) {
    this.pool = new FailoverPool({
      endpoint: config.databaseEndpoint(),
      name: 'watch',
      observer: monitor,
      max: 1,
      application_name: 'pozy-sync-watch',
      connectionTimeoutMillis: PROBE_TIMEOUT_MS,
      query_timeout: PROBE_TIMEOUT_MS,
      idleTimeoutMillis: 0,
      keepAlive: true,
    });
    this.loop = new WakeableLoop({
      pass: () => this.look(),
      idleMs: HEALTHY_EVERY_MS,
      retryMs: LOOKING_EVERY_MS,
      logger: this.logger,
      what: 'Looking for a writable primary',
    });
    // A pool that just lost or refused a connection may have met the failover first (its own refusals excepted,
    // and never sooner than the pace of looking while none is writable).
    monitor.onDiscard((pool) => {
      if (pool !== 'watch') this.loop.wakeAt(this.lastLookAt + LOOKING_EVERY_MS);
    });

    const discarded = metrics.counter({
      name: 'pozy_sync_database_connections_discarded_total',
      help: 'Database connections refused at connect or dropped after use, by pool and cause (wrong_server: read-only or standby; server_error: shutdown, recovery or read-only SQLSTATE; connection_lost; failover)',
      labelNames: ['pool', 'cause'] as const,
    });
    monitor.onDiscard((pool, cause) => discarded.inc({ pool, cause }));
    this.changes = metrics.counter({
      name: 'pozy_sync_database_primary_changes_total',
      help: 'Writable primaries found after none or another: failover (another server), restart (the same one restarted), reconnect (the same one reached again)',
      labelNames: ['kind'] as const,
    });
    // Present from the start at 0, so that an alert's increase() sees the first failover.
    for (const kind of ['failover', 'restart', 'reconnect'] as const) this.changes.inc({ kind }, 0);
    this.outageSeconds = metrics.counter({
      name: 'pozy_sync_database_without_primary_seconds_total',
      help: 'Seconds in all during which no writable primary was reachable through DATABASE_URL (an outage under way counts once it ends)',
    });
    metrics.publishGauges(
      {
        writable: {
          name: 'pozy_sync_database_writable',
          help: 'Whether a primary that takes writes is reachable through DATABASE_URL now (1) or not (0)',
        },
        without: {
          name: 'pozy_sync_database_without_primary_seconds',
          help: 'How long no writable primary has been reachable, 0 while one is',
        },
      },
      async (gauges) => {
        gauges.writable.set(this.current === 'writable' ? 1 : 0);
        gauges.without.set(this.current === 'writable' ? 0 : (Date.now() - this.since) / 1000);
      },
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.look();
    this.loop.start(HEALTHY_EVERY_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
    await this.pool.end();
  }

  get state(): PrimaryState {
    return this.current;
  }

  get writable(): boolean {
    return this.current === 'writable';
  }

  /** Everything the status page and /sync/status show of it. */
  figures(): {
    state: PrimaryState;
    reason: string | null;
    since: Date;
    primary: PrimaryServer | null;
    lastChange: PrimaryChange | null;
    changes: { failover: number; restart: number; reconnect: number };
    withoutPrimarySeconds: number;
  } {
    const ongoing = this.current === 'writable' ? 0 : Date.now() - this.since;
    return {
      state: this.current,
      reason: this.reason ?? null,
      since: new Date(this.since),
      primary: this.server,
      lastChange: this.last,
      changes: { ...this.counted },
      withoutPrimarySeconds: (this.withoutPrimaryTotalMs + ongoing) / 1000,
    };
  }

  /** Called each time a writable primary is found after none was, or after another was. */
  onWritable(listener: (change: PrimaryChange) => void): void {
    this.writableListeners.push(listener);
  }

  /** Looks now (a caller that met a failure it blames on the database). */
  wake(): void {
    this.loop.wake();
  }

  private async look(): Promise<number> {
    this.lastLookAt = Date.now();
    let server: PrimaryServer;
    try {
      server = await this.probe();
    } catch (error) {
      this.failedLooks += 1;
      const readOnly = error instanceof WrongServerError || (error as { code?: unknown }).code === '25006';
      if (readOnly || this.failedLooks >= UNREACHABLE_AFTER) this.lost(readOnly ? 'read_only' : 'unreachable', error);
      return Date.now() + LOOKING_EVERY_MS;
    }
    this.failedLooks = 0;
    this.found(server);
    return Date.now() + HEALTHY_EVERY_MS;
  }

  private async probe(): Promise<PrimaryServer> {
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query<{ address: string; started_at: string; standby: boolean; read_only: boolean }>(PROBE);
      const [row] = rows;
      if (row.standby || row.read_only) throw Object.assign(new Error(`${row.address} no longer takes writes`), { code: '25006' });
      client.release();
      return { address: row.address, startedAt: row.started_at };
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
  }

  private lost(state: Exclude<PrimaryState, 'writable'>, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    if (this.current === 'writable') {
      this.since = Date.now();
      this.logger.warn(`No writable primary (${state}): ${message}`);
    } else if (this.current !== state) {
      this.logger.debug(`Still no writable primary, now ${state}: ${message}`);
    }
    this.current = state;
    this.reason = message;
  }

  private found(server: PrimaryServer): void {
    const before = this.server;
    const wasDown = this.current !== 'writable';
    const outageStart = this.since;
    this.server = server;
    const kind: PrimaryChange['kind'] | undefined =
      before !== null && before.address !== server.address
        ? 'failover'
        : before !== null && before.startedAt !== server.startedAt
          ? 'restart'
          : wasDown
            ? 'reconnect'
            : undefined;
    if (wasDown) {
      this.withoutPrimaryTotalMs += Date.now() - outageStart;
      this.outageSeconds.inc((Date.now() - outageStart) / 1000);
      this.current = 'writable';
      this.reason = undefined;
      this.since = Date.now();
    }
    if (kind === undefined) return;
    const change: PrimaryChange = { kind, at: new Date(), from: before, to: server, withoutPrimaryMs: wasDown ? Date.now() - outageStart : 0 };
    this.last = change;
    this.counted[kind] += 1;
    this.changes.inc({ kind });
    if (kind !== 'reconnect') {
      // Connections made while none was writable were checked, so they lead here; older ones may lead to the old one.
      const marked = this.monitor.discardOlderThan(wasDown ? outageStart : Date.now(), `the primary changed (${kind}) to ${server.address}`);
      this.logger.warn(
        `Primary ${kind === 'failover' ? `moved from ${before?.address} to ${server.address}` : `${server.address} restarted`}; ${marked} older connection(s) discarded`,
      );
    } else {
      this.logger.log(`Writable primary ${server.address} reachable again after ${change.withoutPrimaryMs} ms`);
    }
    for (const listener of this.writableListeners) listener(change);
  }
}
