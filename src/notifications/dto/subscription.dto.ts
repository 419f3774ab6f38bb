import {
  ArrayMaxSize,
  ArrayNotEmpty,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUrl,
  IsUUID,
  Matches,
  MaxLength,
} from 'class-validator';
import { NOTIFICATION_TYPES, NotificationType } from '../outbox-sql';

// Standard Webhooks secrets: `whsec_` and the base64 of 24 to 64 random bytes.
const SECRET = /^whsec_(?:[A-Za-z0-9+/]{4}){8,22}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const URL_OPTIONS = { protocols: ['http', 'https'], require_protocol: true, require_tld: false, require_host: true };
const URL_MESSAGE = 'url must be an http:// or https:// URL';

/** `POST /admin/subscriptions`. */
export class CreateSubscriptionDto {
  /** Where notifications are POSTed. */
  @IsString({ message: URL_MESSAGE })
  @IsUrl(URL_OPTIONS, { message: URL_MESSAGE })
  @MaxLength(2048)
  url!: string;

  /** The signing secret (`whsec_` + base64 of 24 to 64 bytes). Generated when not given; answered once. */
  @IsOptional()
  @IsString()
  @Matches(SECRET, { message: 'secret must be whsec_ followed by the base64 of 24 to 64 bytes' })
  secret?: string;

  @IsArray()
  @ArrayNotEmpty()
  @ArrayUnique()
  @IsIn(NOTIFICATION_TYPES, { each: true, message: `eventTypes must each be one of: ${NOTIFICATION_TYPES.join(', ')}` })
  eventTypes!: NotificationType[];

  /** Only posts and accounts of these profiles; omitted or empty: all. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  @MaxLength(200, { each: true })
  profileIds?: string[];

  /** Only posts and accounts on these platforms (e.g. `instagram`); omitted or empty: all. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @Matches(/^[a-z][a-z0-9_-]{0,49}$/, { each: true, message: 'platforms must each be a platform name such as instagram' })
  platforms?: string[];

  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  /** Default true. An inactive subscription is sent nothing and queues nothing. */
  @IsOptional()
  @IsBoolean()
  active?: boolean;
}

/** `PATCH /admin/subscriptions/:id`: any of the fields, except the secret. */
export class UpdateSubscriptionDto {
  @IsOptional()
  @IsString({ message: URL_MESSAGE })
  @IsUrl(URL_OPTIONS, { message: URL_MESSAGE })
  @MaxLength(2048)
  url?: string;

  @IsOptional()
  @IsArray()
  @ArrayNotEmpty()
  @ArrayUnique()
  @IsIn(NOTIFICATION_TYPES, { each: true, message: `eventTypes must each be one of: ${NOTIFICATION_TYPES.join(', ')}` })
  eventTypes?: NotificationType[];

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  @MaxLength(200, { each: true })
  profileIds?: string[];

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @Matches(/^[a-z][a-z0-9_-]{0,49}$/, { each: true, message: 'platforms must each be a platform name such as instagram' })
  platforms?: string[];

  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @IsOptional()
  @IsBoolean()
  active?: boolean;
}

export class SubscriptionIdParams {
  @IsUUID('4', { message: 'id must be a subscription id (a UUID)' })
  id!: string;
}
