import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { DeadLetter, DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { NotificationReplayService } from '../notifications/notification-replay.service';
import { AckSpool } from '../receive/ack-spool';
import { isEventDataError } from '../receive/event-data-error';
import { ResyncService } from './resync.service';

export type DeadLetterQueue = 'delivery' | 'ack';

/**
 * Replays dead letters of both queues. A reconcile letter: its resource is read from Pozy again (forced), like an
 * admin resync. A notification letter: it is sent again with its original webhook-id, unless a newer version of its
 * resource has reached the subscriber since. An acknowledgment letter: the event is inserted now, with the same
 * idempotent insert. All are safe to repeat.
 */
@Injectable()
export class DeadLetterReplayService {
  constructor(
    private readonly deadLetters: DeadLetterRepository,
    private readonly resync: ResyncService,
    private readonly spool: AckSpool,
    private readonly notifications: NotificationReplayService,
  ) {}

  /** How many letters of the queue are not replayed yet: what a bulk replay would take. */
  async count(queue: DeadLetterQueue): Promise<number> {
    return queue === 'ack' ? this.spool.countDead() : this.deadLetters.countUnreplayed();
  }

  /**
   * One letter of a bulk replay: `replayed`, or `skipped` with why when replaying it would be wrong or do nothing (a
   * notification whose resource has a newer version since, a post neither Pozy nor the mirror knows). Any other
   * failure is thrown, the letter left as it was.
   */
  async replayLetter(letter: DeadLetter): Promise<{ outcome: 'replayed' } | { outcome: 'skipped'; reason: string }> {
    try {
      const { skipped, reason } = await this.replay(letter);
      return skipped ? { outcome: 'skipped', reason: reason ?? 'not replayable' } : { outcome: 'replayed' };
    } catch (error) {
      if (error instanceof ApiError && error.code === 'unknown_to_pozy') return { outcome: 'skipped', reason: error.message };
      throw error;
    }
  }

  /** Replays one letter of either queue; a notification letter that cannot be sent again is a 409. */
  async replayOne(id: string): Promise<{ replayed: true; reconcile?: string; notification?: string; stored?: number }> {
    if (this.spool.getDead(id)) return { replayed: true, stored: (await this.replaySpooled([id])).stored };
    const letter = await this.deadLetters.get(id);
    if (!letter) throw new ApiError('not_found', `No dead letter ${id}`);
    if (letter.kind === 'notification') {
      const { notificationId } = letter.payload;
      await this.notifications.replayOne(notificationId);
      return { replayed: true, notification: notificationId };
    }
    return { replayed: true, reconcile: (await this.replay(letter)).reconcile };
  }

  /**
   * A batch of acknowledgment letters of a bulk replay: inserted together, or, when PostgreSQL refuses one event's
   * data, one by one, the refused ones skipped (they stay in the queue with their reason). Anything else (the
   * database still not acknowledging) is thrown, the letters left in the queue.
   */
  async replayAckLetters(ids: readonly string[]): Promise<{ replayed: number; skipped: Array<{ id: string; reason: string }> }> {
    try {
      await this.spool.replay(ids);
      return { replayed: ids.length, skipped: [] };
    } catch (error) {
      if (!isEventDataError(error)) throw error;
    }
    let replayed = 0;
    const skipped: Array<{ id: string; reason: string }> = [];
    for (const id of ids) {
      try {
        await this.spool.replay([id]);
        replayed += 1;
      } catch (error) {
        if (!isEventDataError(error)) throw error;
        skipped.push({ id, reason: `PostgreSQL refuses this event: ${(error as Error).message}` });
      }
    }
    return { replayed, skipped };
  }

  private async replaySpooled(ids: string[]): Promise<{ stored: number }> {
    try {
      return await this.spool.replay(ids);
    } catch (error) {
      if (isEventDataError(error)) throw new ApiError('unstorable_event', `PostgreSQL refuses this event: ${(error as Error).message}`);
      throw new ApiError('database_unavailable', `The database still does not acknowledge: ${(error as Error).message}`);
    }
  }

  /**
   * A notification letter is marked replayed by the replay itself; one whose resource has a newer version is skipped.
   * A reconcile letter is marked replayed only once its read is requested.
   */
  private async replay(letter: DeadLetter): Promise<{ reconcile?: string; skipped?: boolean; reason?: string }> {
    if (letter.kind === 'notification') {
      const { replayed, reason } = await this.notifications.replayDeadLetter(letter.payload.notificationId);
      return { skipped: !replayed, reason };
    }
    const key = await this.resync.request(letter.payload.resource, letter.payload.id, letter.workspaceId);
    await this.deadLetters.markReplayed(letter.id);
    return { reconcile: key };
  }
}
