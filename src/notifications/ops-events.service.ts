import { Injectable, Logger } from '@nestjs/common';
import { NotificationSignal } from './notification-signal';
import { OpsEventRepository, OpsOccurrence } from './ops-event.repository';

/**
 * Operational events to the team's own endpoints (subscriptions whose eventTypes name `ops.*`), sent like change
 * notifications: Standard Webhooks signing, retries, dead letters. Each occurrence is sent once however many replicas
 * see it (its key), and telling of one never fails what it tells of.
 */
@Injectable()
export class OpsEvents {
  private readonly logger = new Logger(OpsEvents.name);

  constructor(
    private readonly repository: OpsEventRepository,
    private readonly signal: NotificationSignal,
  ) {}

  async emit(occurrence: OpsOccurrence): Promise<void> {
    try {
      const queued = await this.repository.record(occurrence);
      if (queued > 0) this.signal.queued(queued);
    } catch (error) {
      this.logger.warn(`${occurrence.type} (${occurrence.key}) could not be recorded: ${(error as Error).message}`);
    }
  }
}
