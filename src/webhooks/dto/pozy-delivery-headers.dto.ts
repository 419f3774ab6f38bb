import { Expose } from 'class-transformer';
import { IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';

/** The delivery headers Pozy sends with every attempt (lower-case, as Node exposes them). */
export class PozyDeliveryHeadersDto {
  @Expose({ name: 'x-pozy-event-id' })
  @IsString({ message: 'X-Pozy-Event-Id header is required' })
  @IsNotEmpty({ message: 'X-Pozy-Event-Id header is required' })
  @MaxLength(200, { message: 'X-Pozy-Event-Id header is longer than 200 characters' })
  eventId!: string;

  @Expose({ name: 'x-pozy-delivery-id' })
  @IsOptional()
  @IsString()
  @MaxLength(200, { message: 'X-Pozy-Delivery-Id header is longer than 200 characters' })
  deliveryId?: string;

  @Expose({ name: 'x-pozy-attempt' })
  @IsOptional()
  @Matches(/^[1-9]\d{0,3}$/, { message: 'X-Pozy-Attempt header must be a positive integer' })
  attempt?: string;
}
