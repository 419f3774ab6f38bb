import { IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { isText } from '../../common/validate-dto';

const ATTEMPT = /^[1-9]\d{0,3}$/;

/** The delivery headers Pozy sends with every attempt (lower-case, as Node exposes them). */
export class PozyDeliveryHeadersDto {
  @IsString({ message: 'X-Pozy-Event-Id header is required' })
  @IsNotEmpty({ message: 'X-Pozy-Event-Id header is required' })
  @MaxLength(200, { message: 'X-Pozy-Event-Id header is longer than 200 characters' })
  eventId!: string;

  @IsOptional()
  @IsString()
  @MaxLength(200, { message: 'X-Pozy-Delivery-Id header is longer than 200 characters' })
  deliveryId?: string;

  @IsOptional()
  @Matches(ATTEMPT, { message: 'X-Pozy-Attempt header must be a positive integer' })
  attempt?: string;

  /** The headers as Pozy sends them; see QuickCheck (common/validate-dto.ts). */
  static readonly quickCheck = (dto: PozyDeliveryHeadersDto): boolean =>
    isText(dto.eventId, 200) &&
    (dto.deliveryId === undefined || (typeof dto.deliveryId === 'string' && dto.deliveryId.length <= 200)) &&
    (dto.attempt === undefined || (typeof dto.attempt === 'string' && ATTEMPT.test(dto.attempt)));

  static fromHeaders(headers: Record<string, string | string[] | undefined>): PozyDeliveryHeadersDto {
    return Object.assign(new PozyDeliveryHeadersDto(), {
      eventId: headers['x-pozy-event-id'],
      deliveryId: headers['x-pozy-delivery-id'],
      attempt: headers['x-pozy-attempt'],
    });
  }
}
