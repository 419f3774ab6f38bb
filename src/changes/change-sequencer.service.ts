import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { WakeableLoop } from '../common/wakeable-loop';
import { MetricsService } from '../metrics/metrics.service';
import { ChangeRepository } from './change.repository';
import { ChangeSignal } from './change-signal';

/**
 * Entries placed per statement: a pass loops until a batch comes back short. Bounds one statement's locks and
 * memory when a sweep or an import has just written many changes.
 */
const BATCH = 5_000;
/**
 * Without a wake-up, look for unplaced entries this often: those of another replica that died between its write
 * and its own pass, or of a transaction that committed late. A replica's own writes wake its sequencer at once.
 */
const IDLE_MS = 1_000;

/**
 * Gives committed change-feed entries their positions (ChangeRepository.place), on every replica: each wakes it
 * after its own writes commit, and any replica's pass places every committed entry, whoever wrote it.
 */
@Injectable()
export class ChangeSequencer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ChangeSequencer.name);
  private readonly loop: WakeableLoop;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly changes: ChangeRepository,
    private readonly signal: ChangeSignal,
    private readonly metrics: MetricsService,
  ) {
    this.loop = new WakeableLoop({
      pass: () => this.pass(),
      idleMs: IDLE_MS,
      retryMs: IDLE_MS,
      logger: this.logger,
      what: 'Placing change-feed entries',
    });
  }

  onApplicationBootstrap(): void {
    this.unsubscribe = this.signal.onRecorded(() => this.loop.wake());
    this.loop.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.unsubscribe?.();
    await this.loop.stop();
  }

  /** Places every committed entry now (tests, and a caller that wants its own writes readable at once). */
  async placeAll(): Promise<number> {
    let placed = 0;
    for (;;) {
      const { placed: n, newest, waitedSeconds } = await this.changes.place(BATCH);
      placed += n;
      for (const seconds of waitedSeconds) this.metrics.writeToFeed.observe(seconds);
      if (newest !== null) this.signal.sequenced(newest);
      if (n < BATCH) return placed;
    }
  }

  private async pass(): Promise<null> {
    await this.placeAll();
    return null;
  }
}
