import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { DeadLetter, DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { NotificationReplayService } from '../notifications/notification-replay.service';
import { AckSpool } from '../webhooks/ack-spool';
import { isEventDataError } from '../webhooks/event-data-error';
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

  /** Replays every letter of the queue not replayed yet; with dryRun, only says how many that would be. */
  async replayAll(queue: DeadLetterQueue, dryRun: boolean): Promise<{ queue: string; count: number; replayed: boolean; skipped?: number }> {
    if (queue === 'ack') {
      const letters = this.spool.dead(Number.MAX_SAFE_INTEGER);
      if (!dryRun) await this.replaySpooled(letters.map((l) => l.id));
      return { queue: 'ack', count: letters.length, replayed: !dryRun };
    }
    const letters = await this.deadLetters.unreplayed();
    let skipped = 0;
    if (!dryRun) for (const letter of letters) if ((await this.replay(letter)).skipped) skipped += 1;
    // Skipped: notification letters whose resource has a newer version since (replaying would send an older state).
    return { queue, count: letters.length, replayed: !dryRun, ...(dryRun ? {} : { skipped }) };
  }

  /** Replays one letter of either queue; a notification letter that cannot be sent again is a 409. */
  async replayOne(id: string): Promise<{ replayed: true; reconcile?: string; notification?: string; stored?: number }> {
    if (this.spool.getDead(id)) return { replayed: true, stored: (await this.replaySpooled([id])).stored };
    const letter = await this.deadLetters.get(id);
    if (!letter) throw new ApiError(404, 'not_found', `No dead letter ${id}`);
    if (letter.kind === 'notification') {
      const { notificationId } = letter.payload;
      await this.notifications.replayOne(notificationId);
      return { replayed: true, notification: notificationId };
    }
    return { replayed: true, reconcile: (await this.replay(letter)).reconcile };
  }

  private async replaySpooled(ids: string[]): Promise<{ stored: number }> {
    try {
      return await this.spool.replay(ids);
    } catch (error) {
      if (isEventDataError(error)) throw new ApiError(422, 'invalid_event', `PostgreSQL refuses this event: ${(error as Error).message}`);
      throw new ApiError(503, 'database_unavailable', `The database still does not acknowledge: ${(error as Error).message}`);
    }
  }

  /** A notification letter is marked replayed by the replay itself; one whose resource has a newer version is skipped. */
  private async replay(letter: DeadLetter): Promise<{ reconcile?: string; skipped?: boolean }> {
    if (letter.kind === 'notification') {
      const { replayed } = await this.notifications.replayDeadLetter(letter.payload.notificationId);
      return { skipped: !replayed };
    }
    const key = await this.resync.request(letter.payload.resource, letter.payload.id);
    await this.deadLetters.markReplayed(letter.id);
    return { reconcile: key };
  }
}
