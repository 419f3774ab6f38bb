import { randomBytes, randomUUID } from 'node:crypto';
import { OpsEvents } from './ops-events.service';
import { Injectable, Logger } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { CreateSubscriptionDto, DEFAULT_OVERLAP_HOURS, RotateSecretDto, UpdateSubscriptionDto } from './dto/subscription.dto';
import { NotificationSignal } from './notification-signal';
import { SubscriberAddressGuard } from './subscriber-address-guard';
import { Subscription, SubscriptionRepository } from './subscription.repository';

@Injectable()
export class SubscriptionsService {
  private readonly logger = new Logger(SubscriptionsService.name);

  constructor(
    private readonly repository: SubscriptionRepository,
    private readonly signal: NotificationSignal,
    private readonly guard: SubscriberAddressGuard,
    private readonly ops: OpsEvents,
  ) {}

  /** Answers the secret this once: it is never shown again. */
  async create(dto: CreateSubscriptionDto): Promise<Subscription & { secret: string }> {
    await this.checkUrl(dto.url);
    const secret = dto.secret ?? newSecret();
    const subscription = await this.repository.create(randomUUID(), {
      url: dto.url,
      secret,
      eventTypes: dto.eventTypes,
      workspaceIds: dto.workspaceIds ?? [],
      profileIds: dto.profileIds ?? [],
      platforms: dto.platforms ?? [],
      description: dto.description ?? null,
      active: dto.active ?? true,
    });
    this.logger.log(`Subscription ${subscription.id} created for ${new URL(subscription.url).origin} (${subscription.eventTypes.join(', ')})`);
    return { ...subscription, secret };
  }

  /** A new signing secret, answered this once; the current one goes on signing beside it for the overlap. */
  async rotateSecret(id: string, dto: RotateSecretDto): Promise<Subscription & { secret: string }> {
    const secret = dto.secret ?? newSecret();
    const hours = dto.overlapHours ?? DEFAULT_OVERLAP_HOURS;
    const subscription = await this.repository.rotate(id, secret, Math.round(hours * 3_600_000));
    if (!subscription) throw new ApiError('not_found', `No subscription ${id}`);
    const until = subscription.previousSecretUntil;
    this.logger.log(
      `Subscription ${id}: signing secret rotated; ${until ? `the previous one signs too until ${until.toISOString()}` : 'the previous one no longer signs'}`,
    );
    return { ...subscription, secret };
  }

  list(): Promise<Subscription[]> {
    return this.repository.list();
  }

  async get(id: string): Promise<Subscription> {
    const subscription = await this.repository.get(id);
    if (!subscription) throw new ApiError('not_found', `No subscription ${id}`);
    return subscription;
  }

  async update(id: string, dto: UpdateSubscriptionDto): Promise<Subscription> {
    if (dto.url !== undefined) await this.checkUrl(dto.url);
    if (!(await this.repository.update(id, dto))) throw new ApiError('not_found', `No subscription ${id}`);
    return this.get(id);
  }

  async delete(id: string): Promise<{ id: string; deleted: true; cancelled: number }> {
    const cancelled = await this.repository.delete(id);
    if (cancelled === undefined) throw new ApiError('not_found', `No subscription ${id}`);
    this.logger.log(`Subscription ${id} deleted; ${cancelled} pending notification(s) cancelled`);
    return { id, deleted: true, cancelled };
  }

  /** A 400 in the validation's own shape, naming `url`, when the URL points inside or carries credentials. */
  private async checkUrl(url: string): Promise<void> {
    const why = await this.guard.refusalOf(url);
    if (why) throw new ApiError('invalid_request', `Invalid request: url: ${why}`, [{ field: 'url', problems: [why] }]);
  }

  async resume(id: string): Promise<Subscription> {
    const before = await this.repository.get(id);
    if (!before || !(await this.repository.resume(id))) throw new ApiError('not_found', `No subscription ${id}`);
    this.logger.log(`Subscription ${id} resumed`);
    this.signal.queued(1);
    const { pausedAt } = before.health;
    if (pausedAt) {
      await this.ops.emit({
        type: 'ops.subscriber.recovered',
        key: `subscriber.recovered:${id}:${pausedAt.toISOString()}`,
        workspaceId: null,
        data: { subscriptionId: id, pausedAt: pausedAt.toISOString(), resumedBy: 'operator' },
      });
    }
    return this.get(id);
  }
}

/** `whsec_` and the base64 of 32 random bytes (Standard Webhooks). */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
