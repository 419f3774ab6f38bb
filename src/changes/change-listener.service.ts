import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import { AppConfig } from '../config/app-config';
import { connectClient } from '../database/failover-pool';
import { PrimaryWatch } from '../database/primary-watch';
import { SEQUENCED_CHANNEL } from './change.repository';
import { ChangeSignal } from './change-signal';

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 10_000;
/** A database that does not answer: the attempt fails and is retried, rather than hanging. */
const CONNECT_TIMEOUT_MS = 2_000;
/** A shutdown does not wait longer than this for a connection that does not answer to close. */
const CLOSE_TIMEOUT_MS = 1_000;

/**
 * Listens, on a connection of its own to the primary, for any replica's sequencer announcing new positions, and
 * wakes this process's tail readers of GET /changes (change-tail.ts). Without it they still look again at least every
 * second, so a lost connection slows them and loses nothing; it reconnects with backoff.
 */
@Injectable()
export class ChangeListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ChangeListener.name);
  private client: Client | undefined;
  private stopped = true;
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly signal: ChangeSignal,
    watch: PrimaryWatch,
  ) {
    // A LISTEN connection left on a primary that is no longer the primary would hear nothing, and say nothing.
    watch.onWritable((change) => {
      if (change.kind !== 'reconnect' && this.client) this.lost(this.client, new Error(`the primary changed (${change.kind})`));
    });
  }

  onApplicationBootstrap(): void {
    if (!this.config.servesHttp) return;
    this.stopped = false;
    this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const client = this.client;
    if (!client) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([client.end().catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)))]);
    clearTimeout(timer);
  }

  /** A connection to a server that takes writes (a standby refuses LISTEN), tried host by host as DATABASE_URL lists them. */
  private connect(): void {
    connectClient(this.config.databaseEndpoint(), {
      application_name: 'pozy-sync changes listener',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
    })
      .then(async (client) => {
        if (this.stopped) return void (await client.end().catch(() => undefined));
        this.client = client;
        // The payload is the newest position placed; a replica of an older version sends none.
        client.on('notification', (message) =>
          this.signal.sequenced(message.payload && /^\d{1,19}$/.test(message.payload) ? message.payload : undefined),
        );
        client.on('error', (error) => this.lost(client, error));
        client.on('end', () => this.lost(client, new Error('connection ended')));
        await client.query(`LISTEN ${SEQUENCED_CHANNEL}`);
        if (this.failures > 0) this.logger.log('Listening for change-feed positions again');
        this.failures = 0;
        // Positions placed while the connection was down: readers look again.
        this.signal.sequenced();
      })
      .catch((error: unknown) => this.lost(this.client, error instanceof Error ? error : new Error(String(error))));
  }

  /** `client` undefined: the connect itself failed. */
  private lost(client: Client | undefined, error: Error): void {
    if (this.stopped || client !== this.client) return;
    this.client = undefined;
    client?.removeAllListeners('end');
    client?.end().catch(() => undefined);
    if (this.failures === 0) this.logger.warn(`Change-feed listener lost its connection (${error.message}); reconnecting`);
    this.failures += 1;
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(this.failures - 1, 5));
    this.retry = setTimeout(() => this.connect(), delay);
  }
}
