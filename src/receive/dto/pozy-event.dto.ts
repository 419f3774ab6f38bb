import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsNotEmpty, IsObject, IsOptional, IsString, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { IsInstant, parseInstant } from '../../common/instant';
import { isJsonObject, isText } from '../../common/validate-dto';
import { ACCOUNT_EVENTS, isAccountEvent, isPostEvent, POST_EVENTS } from '../pozy-events';

/** Only what routing needs; the rest of the block is stored as sent (events are hints, Pozy's API is the truth). */
export class PozyPostBlockDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  id!: string;
}

export class PozyAccountBlockDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  accountId!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  profileId!: string;
}

/** A real event needs its resource block; a test event (`test: true`) never reaches the mirror, so it need not. */
const needsBlock = (check: (type: unknown) => boolean) => (envelope: PozyEventEnvelopeDto) => check(envelope.event) && envelope.test !== true;
const needsPost = needsBlock(isPostEvent);
const needsAccount = needsBlock(isAccountEvent);

/**
 * The webhook envelope `{ id, event, timestamp, <block> }`. Unknown fields and event types are accepted and
 * stored (forward compatibility); only what the receiver relies on is checked.
 */
export class PozyEventEnvelopeDto {
  @ApiProperty({ maxLength: 200, description: "The event's id: equal to the X-Pozy-Event-Id header.", example: 'evt_01J8Z6W2C5' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  id!: string;

  @ApiProperty({
    maxLength: 100,
    description: `The event type. Known ones: ${[...POST_EVENTS, ...ACCOUNT_EVENTS].join(', ')}. Others are stored (flagged) and change nothing.`,
    example: 'post.published',
  })
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  event!: string;

  @ApiProperty({ format: 'date-time', description: 'When the event happened: ISO 8601 with a time zone.', example: '2026-11-29T10:15:30.000Z' })
  @IsInstant({ dateTime: true })
  timestamp!: string;

  @ApiPropertyOptional({ type: Boolean, description: "Pozy's test event: stored (flagged), changes nothing, needs no block.", example: false })
  @IsOptional()
  @IsBoolean()
  test?: boolean;

  // `required` lists the block's own required fields; `selfRequired: false`: the block itself is optional.
  @ApiProperty({
    type: 'object',
    description: 'Post events (required unless `test`): the post, as Pozy sends it (stored as sent; only `id` is read).',
    properties: { id: { type: 'string', maxLength: 200, description: 'The Pozy post id.', example: '66aa01f3c2b1e4d5f6a7b8c9' } },
    required: ['id'],
    selfRequired: false,
    additionalProperties: true,
  })
  @ValidateIf(needsPost)
  @IsObject({ message: 'post is required for post events' })
  @ValidateNested()
  @Type(() => PozyPostBlockDto)
  post?: PozyPostBlockDto;

  @ApiProperty({
    type: 'object',
    description:
      'Account events (required unless `test`): the account, as Pozy sends it (stored as sent; only `accountId` and `profileId` are read).',
    properties: {
      accountId: { type: 'string', maxLength: 200, description: 'The Pozy account id.', example: '66a9ffee00112233445566bb' },
      profileId: {
        type: 'string',
        maxLength: 200,
        description: "The account's profile: its accounts are read again.",
        example: '66a9ffee00112233445566aa',
      },
    },
    required: ['accountId', 'profileId'],
    selfRequired: false,
    additionalProperties: true,
  })
  @ValidateIf(needsAccount)
  @IsObject({ message: 'account is required for account events' })
  @ValidateNested()
  @Type(() => PozyAccountBlockDto)
  account?: PozyAccountBlockDto;

  /** An envelope as Pozy sends it; see QuickCheck (common/validate-dto.ts). */
  static readonly quickCheck = (dto: PozyEventEnvelopeDto): boolean => {
    if (!isText(dto.id, 200) || !isText(dto.event, 100) || parseInstant(dto.timestamp, { dateTime: true }) === undefined) return false;
    if (dto.test !== undefined && dto.test !== null && typeof dto.test !== 'boolean') return false;
    // A block the type does not need is not validated (ValidateIf), whatever it holds.
    if (needsPost(dto) && !(dto.post instanceof PozyPostBlockDto && isText(dto.post.id, 200))) return false;
    return (
      !needsAccount(dto) || (dto.account instanceof PozyAccountBlockDto && isText(dto.account.accountId, 200) && isText(dto.account.profileId, 200))
    );
  };

  /**
   * The DTO of a parsed body, holding only the fields above. The body itself is stored as received, so a deep
   * copy of it (plainToInstance) would be work on every webhook for nothing.
   */
  static fromJson(body: Record<string, unknown>): PozyEventEnvelopeDto {
    const dto = new PozyEventEnvelopeDto();
    dto.id = body.id as string;
    dto.event = body.event as string;
    dto.timestamp = body.timestamp as string;
    dto.test = body.test as boolean | undefined;
    const { post, account } = body;
    // A block that is not an object stays as it is, for @IsObject to name.
    dto.post = isJsonObject(post) ? Object.assign(new PozyPostBlockDto(), { id: post.id }) : (post as undefined);
    dto.account = isJsonObject(account)
      ? Object.assign(new PozyAccountBlockDto(), { accountId: account.accountId, profileId: account.profileId })
      : (account as undefined);
    return dto;
  }
}
