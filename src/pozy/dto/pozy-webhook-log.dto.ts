import { IsInt, IsISO8601, IsNotEmpty, IsObject, IsOptional, IsString, Min } from 'class-validator';

/** One delivery attempt as `GET /v1/webhooks/logs` lists it (Pozy's delivery log, camelCase on the wire): what the backfill relies on. */
export class PozyWebhookLogDto {
  @IsString()
  @IsNotEmpty()
  eventId!: string;

  @IsString()
  @IsNotEmpty()
  event!: string;

  @IsString()
  status!: string;

  /** The envelope as sent: what the backfill stores when we never received it. */
  @IsObject()
  requestPayload!: Record<string, unknown>;

  @IsOptional()
  @IsInt()
  @Min(0)
  attemptNumber?: number;

  @IsISO8601()
  createdAt!: string;
}
