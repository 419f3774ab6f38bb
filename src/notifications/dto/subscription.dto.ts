import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiPropertyOptions, OmitType, PartialType } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsNotEmpty,
  IsNumber,
  IsOptional,
  IsString,
  IsUrl,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidationArguments,
} from 'class-validator';
import { isIPv4 } from 'node:net';
import { describeForbidden, forbiddenRange } from '../address-policy';
import { NOTIFICATION_TYPES, NotificationType } from '../notification-types';
import { WORKSPACE_ID } from '../../common/workspace-id';
import { MAX_WORKSPACES_ASKED } from '../../common/workspace-query';

// Standard Webhooks secrets: `whsec_` and the base64 of 24 to 64 random bytes.
const SECRET = /^whsec_(?:[A-Za-z0-9+/]{4}){8,22}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** An optional signing secret in a body: creation and rotation take the same form. */
const SecretParam = (description: string) =>
  applyDecorators(
    ApiPropertyOptional({ description, pattern: SECRET.source, example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }),
    IsOptional(),
    IsString(),
    Matches(SECRET, { message: 'secret must be whsec_ followed by the base64 of 24 to 64 bytes' }),
  );
const URL_OPTIONS = { protocols: ['http', 'https'], require_protocol: true, require_tld: false, require_host: true };
const URL_MESSAGE = 'url must be an http:// or https:// URL';

/**
 * The URL check refuses IPv4 addresses written as one number or in octal (`2130706433`, `0177.0.0.1`), which
 * browsers and undici read as addresses: say which address, and its range when it is an internal one.
 */
function urlMessage({ value }: ValidationArguments): string {
  const written = typeof value === 'string' ? /^https?:\/\/(?:[^@/?#]*@)?([^/:?#]+)/i.exec(value)?.[1] : undefined;
  let host: string | undefined;
  try {
    host = written === undefined ? undefined : new URL(value as string).hostname;
  } catch {
    return URL_MESSAGE;
  }
  if (host === undefined || !isIPv4(host) || host === written) return URL_MESSAGE;
  const forbidden = forbiddenRange(host);
  const range = forbidden ? `; ${describeForbidden(host, forbidden)}` : '';
  return `${URL_MESSAGE} (its host ${written} is the address ${host} written another way: write it as ${host}${range})`;
}

// The documentation of the fields, shared by create and update.
const DOC: Record<'url' | 'eventTypes' | 'workspaceIds' | 'profileIds' | 'platforms' | 'description' | 'active', ApiPropertyOptions> = {
  url: {
    description:
      'Where notifications are POSTed: an http:// or https:// URL, without credentials. Loopback, private, link-local and cloud metadata addresses (and names resolving to them) are refused unless NOTIFY_ALLOWED_HOSTS allows them; redirects are not followed.',
    format: 'uri',
    maxLength: 2048,
    example: 'https://example.com/hooks/pozy-sync',
  },
  eventTypes: {
    enum: [...NOTIFICATION_TYPES],
    isArray: true,
    minItems: 1,
    uniqueItems: true,
    description: 'The changes to be notified of.',
    example: ['post.changed', 'post.deleted'],
  },
  workspaceIds: {
    type: [String],
    maxItems: MAX_WORKSPACES_ASKED,
    description: 'Only posts and accounts of these workspaces (ids such as `acme-eu`); omitted or empty: all, those added later included.',
    example: ['default'],
  },
  profileIds: {
    type: [String],
    maxItems: 100,
    description: 'Only posts and accounts of these profiles (each up to 200 characters); omitted or empty: all.',
    example: ['66a9ffee00112233445566aa'],
  },
  platforms: {
    type: [String],
    maxItems: 50,
    description: 'Only posts and accounts on these platforms (lower-case names); omitted or empty: all.',
    example: ['instagram', 'linkedin'],
  },
  description: { type: String, maxLength: 500, description: 'For people.', example: 'CRM sync' },
  active: { type: Boolean, description: 'Default true. An inactive subscription is sent nothing and queues nothing.', example: true },
};

/** `POST /admin/subscriptions`. */
export class CreateSubscriptionDto {
  /** Where notifications are POSTed. */
  @ApiProperty(DOC.url)
  @IsString({ message: URL_MESSAGE })
  @IsUrl(URL_OPTIONS, { message: urlMessage })
  @MaxLength(2048)
  url!: string;

  /** The signing secret (`whsec_` + base64 of 24 to 64 bytes). Generated when not given; answered once. */
  @SecretParam('The signing secret: `whsec_` and the base64 of 24 to 64 bytes. Generated when absent; answered once, on creation.')
  secret?: string;

  @ApiProperty(DOC.eventTypes)
  @IsArray()
  @ArrayNotEmpty()
  @ArrayUnique()
  @IsIn(NOTIFICATION_TYPES, { each: true, message: `eventTypes must each be one of: ${NOTIFICATION_TYPES.join(', ')}` })
  eventTypes!: NotificationType[];

  /** Only posts and accounts of these workspaces; omitted or empty: all. */
  @ApiPropertyOptional(DOC.workspaceIds)
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_WORKSPACES_ASKED)
  @Matches(WORKSPACE_ID, { each: true, message: 'workspaceIds must each be a workspace id (lower-case letters, digits and -, 1 to 63)' })
  workspaceIds?: string[];

  /** Only posts and accounts of these profiles; omitted or empty: all. */
  @ApiPropertyOptional(DOC.profileIds)
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @IsNotEmpty({ each: true })
  @MaxLength(200, { each: true })
  profileIds?: string[];

  /** Only posts and accounts on these platforms (e.g. `instagram`); omitted or empty: all. */
  @ApiPropertyOptional(DOC.platforms)
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @Matches(/^[a-z][a-z0-9_-]{0,49}$/, { each: true, message: 'platforms must each be a platform name such as instagram' })
  platforms?: string[];

  @ApiPropertyOptional(DOC.description)
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  /** Default true. An inactive subscription is sent nothing and queues nothing. */
  @ApiPropertyOptional(DOC.active)
  @IsOptional()
  @IsBoolean()
  active?: boolean;
}

/** A rotation's overlap: a day by default, a month at most. */
export const DEFAULT_OVERLAP_HOURS = 24;
const MAX_OVERLAP_HOURS = 720;

/** `POST /admin/subscriptions/:id/rotate-secret`. */
export class RotateSecretDto {
  /** How long the current secret goes on signing beside the new one; a fraction of an hour too, 0 for not at all. */
  @ApiPropertyOptional({
    type: Number,
    minimum: 0,
    maximum: MAX_OVERLAP_HOURS,
    default: DEFAULT_OVERLAP_HOURS,
    description:
      'Hours the current secret goes on signing every notification beside the new one (a fraction too), so receivers can move to the new secret without rejecting any; 0: from now on only the new one. A rotation during an overlap ends it: the secret replaced then stops signing.',
    example: 24,
  })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'overlapHours must be a number of hours' })
  @Min(0)
  @Max(MAX_OVERLAP_HOURS)
  overlapHours?: number;

  /** The new secret; generated when not given. */
  @SecretParam('The new signing secret: `whsec_` and the base64 of 24 to 64 bytes. Generated when absent; answered once.')
  secret?: string;
}

/**
 * `PATCH /admin/subscriptions/:id`: any of the fields, except the secret (`POST …/rotate-secret` changes it). The
 * mapped type keeps every validation and documentation decorator, each made optional.
 */
export class UpdateSubscriptionDto extends PartialType(OmitType(CreateSubscriptionDto, ['secret'] as const)) {}

export class SubscriptionIdParams {
  @ApiProperty({ format: 'uuid', description: 'A subscription id.', example: '2f6a1c9e-5b7d-4e3f-9a8b-1c2d3e4f5a6b' })
  @IsUUID('4', { message: 'id must be a subscription id (a UUID)' })
  id!: string;
}
