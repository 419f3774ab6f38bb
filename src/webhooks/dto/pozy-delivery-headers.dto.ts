import { IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';

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
  @Matches(/^[1-9]\d{0,3}$/, { message: 'X-Pozy-Attempt header must be a positive integer' })
  attempt?: string;

  static fromHeaders(headers: Record<string, string | string[] | undefined>): PozyDeliveryHeadersDto {
    return Object.assign(new PozyDeliveryHeadersDto(), {
      eventId: headers['x-pozy-event-id'],
      deliveryId: headers['x-pozy-delivery-id'],
      attempt: headers['x-pozy-attempt'],
    });
  }
}
