import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsInt, IsNumber, IsOptional, IsString, IsUrl, Matches, Max, MaxLength, Min, MinLength } from 'class-validator';
import { BooleanParam, LimitParam } from '../../common/query-params';
import { WORKSPACE_ID } from '../../common/workspace-id';

const SLUG_RULE = '1 to 63 lower-case letters, digits or hyphens, the first not a hyphen';
const URL_OPTIONS = { protocols: ['http', 'https'], require_protocol: true, require_tld: false, require_host: true };
const MAX_RATE_LIMIT = 100_000;
/** A rotation's overlap: a day by default, a month at most (as the subscriptions' secrets). */
export const DEFAULT_OVERLAP_HOURS = 24;

/** `POST /admin/workspaces`. */
export class CreateWorkspaceDto {
  @ApiProperty({
    description: `The workspace's id, chosen by you: ${SLUG_RULE}. It names the workspace in every answer and path.`,
    pattern: WORKSPACE_ID.source,
    example: 'acme-eu',
  })
  @IsString()
  @Matches(WORKSPACE_ID, { message: `id must be ${SLUG_RULE}` })
  id!: string;

  @ApiProperty({
    description: "The workspace's Pozy API key. Checked against Pozy with one read before anything is stored; never answered.",
  })
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  apiKey!: string;

  @ApiPropertyOptional({ description: 'For people.', maxLength: 100, example: 'Acme (EU)' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  name?: string;

  @ApiPropertyOptional({ description: "Pozy's API URL for this workspace; default POZY_API_URL.", format: 'uri', example: 'https://api.pozy.ai' })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  @IsUrl(URL_OPTIONS, { message: 'apiUrl must be an http:// or https:// URL' })
  apiUrl?: string;

  @ApiPropertyOptional({
    description:
      "The key's requests per minute (default POZY_RATE_LIMIT_PER_MINUTE); workspaces sharing a key share its budget, and the smallest figure holds.",
    minimum: 1,
    maximum: MAX_RATE_LIMIT,
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_RATE_LIMIT)
  rateLimitPerMinute?: number;

  @ApiPropertyOptional({
    description:
      "The secret of the workspace's webhook subscription in Pozy, when you set it up yourself (no PUBLIC_URL, or manageWebhook false). Absent: one is generated and answered once.",
    minLength: 16,
    maxLength: 200,
  })
  @IsOptional()
  @IsString()
  @MinLength(16)
  @MaxLength(200)
  webhookSecret?: string;

  @ApiPropertyOptional({
    description: "With PUBLIC_URL set: whether pozy-sync makes the workspace's subscription in Pozy and keeps it healthy (default true).",
  })
  @IsOptional()
  @IsBoolean()
  manageWebhook?: boolean;
}

/** `PATCH /admin/workspaces/:id`: any of these. */
export class UpdateWorkspaceDto {
  @ApiPropertyOptional({ maxLength: 100 })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  name?: string;

  @ApiPropertyOptional({ description: 'A new Pozy API key (a rotation): checked against Pozy before it is stored.' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  apiKey?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_RATE_LIMIT, description: "The key's requests per minute." })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_RATE_LIMIT)
  rateLimitPerMinute?: number;

  @ApiPropertyOptional({ description: 'true: nothing is read from Pozy (deliveries are still received and stored) until false again.' })
  @IsOptional()
  @IsBoolean()
  paused?: boolean;

  @ApiPropertyOptional({
    description:
      'Rotate the webhook secret: the new one is generated (and, for a managed webhook, set in Pozy; else answered once). Deliveries signed with the old one are accepted for `overlapHours`.',
  })
  @IsOptional()
  @IsBoolean()
  rotateWebhookSecret?: boolean;

  @ApiPropertyOptional({ minimum: 16, maxLength: 200, description: 'Rotate to this secret instead of a generated one (not for a managed webhook).' })
  @IsOptional()
  @IsString()
  @MinLength(16)
  @MaxLength(200)
  webhookSecret?: string;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: 720,
    default: DEFAULT_OVERLAP_HOURS,
    description: 'Hours the old secret is still accepted after a rotation.',
  })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'overlapHours must be a number of hours' })
  @Min(0)
  @Max(720)
  overlapHours?: number;
}

export class WorkspaceIdParams {
  @ApiProperty({ pattern: WORKSPACE_ID.source, example: 'acme-eu' })
  @IsString()
  @Matches(WORKSPACE_ID, { message: `id must be a workspace id (${SLUG_RULE})` })
  id!: string;
}

export class ListWorkspacesQuery {
  @LimitParam(100, 'Workspaces per page, oldest first.')
  limit?: number;

  @ApiPropertyOptional({ description: '`nextCursor` of the previous page, as given.' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  cursor?: string;
}

export class RemoveWorkspaceQuery {
  @ApiPropertyOptional({ description: "true: stop mirroring and remove the managed webhook, but keep the workspace's rows (readable, `detached`)." })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  keepData?: boolean;
}

export class WorkspacePostParams extends WorkspaceIdParams {
  @ApiProperty({ description: 'A Pozy post id (24 lower-case hexadecimal digits).', pattern: '^[0-9a-f]{24}$', example: '66aa01f3c2b1e4d5f6a7b8c9' })
  @Matches(/^[0-9a-f]{24}$/, { message: 'postId must be a Pozy id: 24 lower-case hexadecimal digits' })
  postId!: string;
}

export class WorkspaceProfileParams extends WorkspaceIdParams {
  @ApiProperty({
    description: 'A Pozy profile id (24 lower-case hexadecimal digits).',
    pattern: '^[0-9a-f]{24}$',
    example: '66aa01f3c2b1e4d5f6a7b8c9',
  })
  @Matches(/^[0-9a-f]{24}$/, { message: 'profileId must be a Pozy id: 24 lower-case hexadecimal digits' })
  profileId!: string;
}
