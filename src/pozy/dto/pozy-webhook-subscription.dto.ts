import { IsBoolean, IsInt, IsOptional, IsString } from 'class-validator';

/** A subscription as `GET|POST|PUT /v1/webhooks/settings` answer it: what pozy-sync reads of it (never its secret). */
export class PozyWebhookSubscriptionDto {
  @IsString()
  _id!: string;

  @IsOptional()
  @IsString()
  url?: string;

  @IsOptional()
  @IsBoolean()
  isActive?: boolean;

  @IsOptional()
  @IsInt()
  failureCount?: number;

  @IsOptional()
  @IsString()
  lastFiredAt?: string | null;
}
