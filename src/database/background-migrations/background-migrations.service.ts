import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { sql } from 'kysely';
import { AppConfig } from '../../config/app-config';
import { WakeableLoop } from '../../common/wakeable-loop';
import { MetricsService } from '../../metrics/metrics.service';
import { LockKey, tryAdvisoryLock } from '../advisory-lock';
import { DatabaseService } from '../database.service';
import { isDatabaseUnavailable } from '../../common/database-errors';
import { BACKGROUND_MIGRATIONS, BackgroundMigration } from './background-migration';
import { DataMigrationProgress, DataMigrationRepository } from './data-migration.repository';

/** How long `done()` trusts what it read: code that switches shapes learns of the end within this. */
const DONE_CACHE_MS = 5_000;
/** While another worker holds the migrations' lock, look again this often (it may die). */
const LOCKED_RETRY_MS = 10_000;
/** A batch that failed is tried again this much later, from the same cursor. */
const FAILED_RETRY_MS = 5_000;
/** How often /metrics reads the migrations' progress at most (see the gauges). */
const GAUGES_READ_MS = 5_000;

/**
 * Runs the release's background data migrations (background-migration.ts) on a worker, one worker at a time (an
 * advisory lock), one migration after another, one batch per transaction with its cursor. Paced: after each batch it
 * rests as long as the batch took (BACKGROUND_MIGRATION_BATCH_SIZE rows at most), so it takes at most half of one
 * connection's time and the webhooks and reads around it keep their latency. A batch's lock waits are bounded by
 * MIGRATION_LOCK_TIMEOUT_MS, and a failed batch is tried again. Every replica can ask `done()`.
 */
@Injectable()
export class BackgroundMigrations implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(BackgroundMigrations.name);
  private readonly loop: WakeableLoop;
  private readonly finished = new Map<string, { done: boolean; at: number }>();
  private stopping = false;
  private gaugesReadAt = 0;

  constructor(
    private readonly config: AppConfig,
    private readonly database: DatabaseService,
    private readonly repository: DataMigrationRepository,
    @Inject(BACKGROUND_MIGRATIONS) private readonly migrations: readonly BackgroundMigration[],
    metrics: MetricsService,
  ) {
    this.loop = new WakeableLoop({
      pass: () => this.pass(),
      idleMs: Infinity,
      retryMs: FAILED_RETRY_MS,
      logger: this.logger,
      what: 'Running background data migrations',
    });
    metrics.publishGauges(
      {
        done: { name: 'pozy_sync_background_migration_rows_done', help: 'Rows a background data migration has changed so far', labelNames: ['name'] },
        total: {
          name: 'pozy_sync_background_migration_rows_estimated',
          help: "PostgreSQL's estimate, when it started, of the rows a background data migration changes",
          labelNames: ['name'],
        },
        running: { name: 'pozy_sync_background_migrations_running', help: 'Background data migrations started and not done', labelNames: [] },
      },
      async (gauges) => {
        // At most one read per GAUGES_READ_MS however often /metrics is scraped (an anonymous flood of it must not take
        // a connection a request); between reads, and while the database is away, the gauges keep their last values.
        if (Date.now() - this.gaugesReadAt < GAUGES_READ_MS) return;
        this.gaugesReadAt = Date.now();
        const all = await this.repository.list().catch(() => undefined);
        if (!all) return;
        for (const m of all) {
          gauges.done.set({ name: m.name }, m.rowsDone);
          gauges.total.set({ name: m.name }, m.rowsTotal ?? 0);
        }
        gauges.running.set(all.filter((m) => m.state === 'running').length);
      },
    );
  }

  onApplicationBootstrap(): void {
    if (this.config.runsWorker && this.migrations.length > 0) this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
  }

  /** Whether `name` has changed every row: until then, read both shapes. Cached for a few seconds. */
  async done(name: string): Promise<boolean> {
    const known = this.finished.get(name);
    if (known && (known.done || Date.now() - known.at < DONE_CACHE_MS)) return known.done;
    const done = (await this.repository.find(name))?.state === 'done';
    this.finished.set(name, { done, at: Date.now() });
    return done;
  }

  /** Every one started so far, for /sync/status and the status page. */
  progress(): Promise<DataMigrationProgress[]> {
    return this.repository.list();
  }

  /** Runs every migration not done, each to its end; answers when to look again (null: all done). */
  private async pass(): Promise<number | null> {
    const lock = await tryAdvisoryLock(this.database.db, LockKey.BackgroundMigrations);
    if (!lock) return Date.now() + LOCKED_RETRY_MS;
    try {
      for (const migration of this.migrations) {
        if (this.stopping) return null;
        const finished = await this.runToEnd(migration);
        if (!finished) return this.stopping ? null : Date.now() + FAILED_RETRY_MS;
      }
      return null;
    } finally {
      await lock.release();
    }
  }

  /** Answers whether it finished (false: stopping, or a batch failed and is to be tried again). */
  private async runToEnd(migration: BackgroundMigration): Promise<boolean> {
    const { name } = migration;
    let progress = (await this.repository.find(name)) ?? (await this.repository.start(name, await migration.estimateRows(this.database.db)));
    if (progress.state === 'done') return true;
    if (progress.batches === 0) this.logger.log(`Background data migration ${name} starting (about ${progress.rowsTotal ?? '?'} rows)`);
    else this.logger.log(`Background data migration ${name} resuming after ${progress.rowsDone} rows (cursor ${progress.cursor})`);
    let cursor = progress.cursor;
    while (!this.stopping) {
      const began = Date.now();
      let changed: { cursor: string; rows: number } | null;
      try {
        changed = await this.database.db.transaction().execute(async (trx) => {
          // Its lock waits bounded as a migration's: a batch never queues the service's writes behind it for long.
          await sql`SELECT set_config('lock_timeout', ${String(this.config.migrationLockTimeoutMs)}, true)`.execute(trx);
          const result = await migration.batch(trx, cursor, this.config.backgroundMigrationBatchSize);
          if (result) await this.repository.recordBatch(trx, name, result);
          return result;
        });
      } catch (error) {
        const message = (error as Error).message;
        this.logger.warn(`Background data migration ${name}: a batch after ${cursor ?? 'the start'} failed; trying again: ${message}`);
        if (!isDatabaseUnavailable(error)) await this.repository.recordFailure(name, message).catch(() => undefined);
        return false;
      }
      if (!changed) {
        await this.repository.finish(name);
        progress = (await this.repository.find(name))!;
        this.finished.set(name, { done: true, at: Date.now() });
        this.logger.log(`Background data migration ${name} done: ${progress.rowsDone} rows in ${progress.batches} batches`);
        return true;
      }
      cursor = changed.cursor;
      // As long as the batch took: at most half of one connection's time.
      await new Promise((resolve) => setTimeout(resolve, Math.max(10, Date.now() - began)));
    }
    return false;
  }
}
