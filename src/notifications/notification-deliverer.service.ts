import { randomUUID } from 'node:crypto';
import { OpsEvents } from './ops-events.service';
import { isOpsEventType } from './notification-types';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { Tracing } from '../tracing/tracing.service';
import { hostname } from 'node:os';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SecretKeyError } from '../common/secret-box';
import { WakeableLoop } from '../common/wakeable-loop';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { AttemptResult, NotificationSender } from './notification-sender';
import { AttemptRecord, DueNotification, Lease, NotificationRepository } from './notification.repository';
import { NotificationSignal } from './notification-signal';
import { secretsAt, SigningSecrets, SubscriptionRepository } from './subscription.repository';

/** Look for due notifications this often; this process's own writes wake the worker at once. */
const POLL_MS = 500;
/** The longest a subscriber's Retry-After is honoured: past it a retry could name no date at all. */
const MAX_RETRY_AFTER_MS = 86_400_000;
/**
 * Subscribers served at once by this process. Each holds one slot at most, and a slow or dead one holds it only
 * for its attempts' timeout (its retries are then scheduled later), so it cannot starve the others.
 */
const MAX_SUBSCRIBERS = 64;

/**
 * The delivery worker: sends the outbox's notifications to their subscribers, apart from the reconcile jobs (its own
 * loop and connection pool, so a slow subscriber never holds back the mirror). One worker at a time sends a given
 * subscription's notifications (a lease in the database), up to NOTIFY_CONCURRENCY at once and, per resource, only
 * the newest version. Retries back off exponentially with jitter; the dead-letter queue takes a notification whose
 * endpoint kept timing out or stayed unreachable for over DEAD_LETTER_AFTER_MS, answered a permanent 4xx or a redirect
 * (reason `redirect`), or is at an address the guard refuses (reason `forbidden_address`).
 */
@Injectable()
export class NotificationDeliverer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(NotificationDeliverer.name);
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly draining = new Map<string, Promise<void>>();
  private readonly leaseMs: number;
  private readonly batchSize: number;
  /** Bumped by every signal: a drain that found nothing looks again if it moved meanwhile. */
  private generation = 0;
  private readonly loop: WakeableLoop;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly repository: NotificationRepository,
    private readonly sender: NotificationSender,
    private readonly signal: NotificationSignal,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly subscriptions: SubscriptionRepository,
    private readonly tracing: Tracing,
    private readonly ops: OpsEvents,
  ) {
    this.batchSize = config.notify.concurrency * 2;
    // Outlives the longest batch (two rounds of timed-out attempts), so a live worker never loses its lease.
    this.leaseMs = 30_000 + 4 * config.notify.timeoutMs;
    this.loop = new WakeableLoop({
      pass: () => this.poll(),
      idleMs: POLL_MS,
      retryMs: POLL_MS,
      logger: this.logger,
      what: 'Looking for due notifications',
    });
  }

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    this.stopped = false;
    this.unsubscribe = this.signal.subscribe(() => this.wake());
    this.loop.start();
  }

  /** Attempts in flight finish (each is bounded by NOTIFY_TIMEOUT_MS) and are recorded; nothing new starts. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    await this.loop.stop();
    await Promise.all(this.draining.values());
  }

  private wake(): void {
    this.generation += 1;
    this.loop.wake();
  }

  /** Leases the subscriptions with due notifications that free slots allow, and drains each in the background. */
  private async poll(): Promise<null> {
    const free = MAX_SUBSCRIBERS - this.draining.size;
    if (free <= 0) return null;
    const leases = await this.repository.leaseDue(this.owner, this.leaseMs, [...this.draining.keys()], free);
    for (const lease of leases) {
      this.draining.set(
        lease.id,
        this.drain(lease).finally(() => this.draining.delete(lease.id)),
      );
    }
    return null;
  }

  private async drain(lease: Lease): Promise<void> {
    try {
      const signing = this.signingSecrets(lease);
      while (!this.stopped) {
        const generation = this.generation;
        const due = await this.repository.takeDue(lease.id, this.batchSize);
        if (due.length === 0) {
          if (generation === this.generation) break;
          continue;
        }
        const records = await mapLimit(due, this.config.notify.concurrency, (notification) => this.attempt(lease, signing, notification));
        const health = await this.repository.record(lease.id, this.owner, records, {
          pauseAfterMs: this.config.notify.pauseAfterMs,
          leaseMs: this.leaseMs,
          // A failing notification is retried at least every NOTIFY_RETRY_MAX_MS (plus its timeout).
          quietGapMs: 2 * (this.config.notify.retryMaxMs + this.config.notify.timeoutMs) + POLL_MS,
        });
        records.forEach((record, index) => this.count(lease, record, due[index]));
        await this.tellOps(lease, records, due);
        if (health.pausedAt) {
          this.logger.warn(`Subscription ${lease.id} paused: every attempt failed for over ${this.config.notify.pauseAfterMs} ms`);
          await this.ops.emit({
            type: 'ops.subscriber.paused',
            key: `subscriber.paused:${lease.id}:${health.pausedAt.toISOString()}`,
            workspaceId: null,
            data: { subscriptionId: lease.id, pausedAt: health.pausedAt.toISOString(), pauseAfterMs: this.config.notify.pauseAfterMs },
          });
          break;
        }
        if (!health.leaseHeld) break;
      }
    } catch (error) {
      this.logger.warn(`Delivering to subscription ${lease.id} failed; retrying: ${(error as Error).message}`);
    } finally {
      await this.repository.release(lease.id, this.owner).catch(() => undefined);
    }
  }

  /**
   * The lease's secrets, decrypted; a key missing from SECRETS_ENCRYPTION_KEY (or the wrong one) makes every attempt
   * a failure that says so, retried and counted like any other, so the subscriber's health shows it.
   */
  private signingSecrets(lease: Lease): SigningSecrets | SecretKeyError {
    try {
      return this.subscriptions.signingSecrets(lease);
    } catch (error) {
      if (!(error instanceof SecretKeyError)) throw error;
      this.logger.error(`Cannot sign notifications to subscription ${lease.id}: ${error.message}`);
      return error;
    }
  }

  /** Inside a PRODUCER span of the write's trace (the notification's stored traceparent), when traces are on. */
  private attempt(lease: Lease, signing: SigningSecrets | SecretKeyError, notification: DueNotification): Promise<AttemptRecord> {
    if (!this.tracing.enabled) return this.attemptOnce(lease, signing, notification);
    const attributes = {
      workspaceId: notification.workspaceId,
      'pozy_sync.subscription.id': lease.id,
      'pozy_sync.notification.id': notification.id,
      'pozy_sync.notification.attempt': notification.attempts + 1,
      'pozy_sync.resource': notification.resourceKey,
    };
    const options = { kind: SpanKind.PRODUCER, parent: notification.traceParent, attributes };
    return this.tracing.span(`notify ${notification.type}`, options, async (span) => {
      const record = await this.attemptOnce(lease, signing, notification);
      span.setAttributes({
        'pozy_sync.notification.outcome': record.outcome,
        ...(record.statusCode ? { 'http.response.status_code': record.statusCode } : {}),
      });
      if (record.outcome !== 'delivered') span.setStatus({ code: SpanStatusCode.ERROR, message: record.error ?? record.outcome });
      return record;
    });
  }

  private async attemptOnce(lease: Lease, signing: SigningSecrets | SecretKeyError, notification: DueNotification): Promise<AttemptRecord> {
    const attemptedAt = new Date();
    const result: AttemptResult =
      signing instanceof SecretKeyError
        ? { ok: false, statusCode: null, durationMs: 0, error: `Not sent: ${signing.message}`, unreachable: false, permanent: false }
        : // Signed with the secrets of this moment: a rotation's overlap may end while a lease is held.
          await this.sender.send({ url: lease.url, secrets: secretsAt(signing, attemptedAt) }, notification);
    const base = { id: notification.id, attemptedAt, durationMs: result.durationMs, statusCode: result.statusCode, replay: notification.replay };
    if (result.ok) {
      return { ...base, outcome: 'delivered', error: null, nextAttemptAt: null, failingSince: null, reason: null };
    }
    const failingSince = result.unreachable ? (notification.failingSince ?? attemptedAt) : null;
    const failure = { ...base, error: result.error, failingSince };
    if (result.permanent) {
      const reason = result.permanentReason ?? `The endpoint answered ${result.statusCode}, which retrying cannot change`;
      return { ...failure, outcome: 'dead', nextAttemptAt: null, reason };
    }
    const deadLetterAt = failingSince ? failingSince.getTime() + this.config.deadLetterAfterMs : Infinity;
    if (Date.now() > deadLetterAt) {
      const seconds = this.config.deadLetterAfterMs / 1000;
      return { ...failure, outcome: 'dead', nextAttemptAt: null, reason: `The endpoint timed out or was unreachable for over ${seconds} s` };
    }
    const { retryBaseMs, retryMaxMs } = this.config.notify;
    const bound = Math.min(retryMaxMs, retryBaseMs * 2 ** notification.attempts);
    // Half fixed, half random: retries spread out yet keep growing. Never past the dead-letter deadline (+1 ms),
    // so an endpoint that stays down is given up on when the threshold passes, not a backoff step later.
    const delay = Math.max(bound / 2 + Math.random() * (bound / 2), Math.min(result.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
    const next = Math.min(Date.now() + delay, deadLetterAt + 1);
    return { ...failure, outcome: 'retry', nextAttemptAt: new Date(next), reason: null };
  }

  /** Each notification given up on, as an operational event; one that was itself an ops event is not told of again. */
  private async tellOps(lease: Lease, records: AttemptRecord[], due: DueNotification[]): Promise<void> {
    for (const [index, record] of records.entries()) {
      const notification = due[index];
      if (record.outcome !== 'dead' || isOpsEventType(notification.type)) continue;
      await this.ops.emit({
        type: 'ops.dead_letter.added',
        // One attempt ends a notification at a time (its lease): the attempt names the occurrence.
        key: `dead_letter.added:${record.id}:${record.attemptedAt.toISOString()}`,
        workspaceId: notification.workspaceId,
        data: {
          kind: 'notification',
          notificationId: record.id,
          subscriptionId: lease.id,
          resourceKey: notification.resourceKey,
          reason: record.reason,
        },
      });
    }
  }

  private count(lease: Lease, record: AttemptRecord, notification: DueNotification): void {
    this.metrics.notificationAttempts.inc({ outcome: record.outcome });
    this.metrics.notificationDuration.observe(record.durationMs / 1000);
    // A replay is an operator's, long after the write: it says nothing of the delivery's latency.
    if (record.outcome === 'delivered' && !record.replay) {
      const seconds = (record.attemptedAt.getTime() + record.durationMs - notification.createdAt.getTime()) / 1000;
      this.metrics.writeToNotification.observe({ subscriber: notification.attempts === 0 ? 'healthy' : 'retried' }, Math.max(0, seconds));
    }
    if (record.outcome === 'dead') {
      this.logger.warn(
        `Notification ${record.id} to subscription ${lease.id} moved to the delivery dead-letter queue: ${record.reason} (${record.error})`,
      );
    }
  }
}

/** Runs `fn` over `items`, at most `limit` at a time, keeping the order of the results. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]);
    }
  });
  await Promise.all(lanes);
  return results;
}
