import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsInstant } from '../../../common/instant';
import { MirroredAccountResponse } from '../../accounts/dto/account.response';
import { MirroredPostResponse } from '../../posts/dto/post.response';
import { PageQuery } from '../../page.query';

/** `GET /posts/:id/history`, `GET /accounts/:id/history`: `limit`, `cursor`, `workspace`, `consistency`. */
export class HistoryQuery extends PageQuery {}

/** `asOf` on GET /posts/:id and GET /accounts/:id. */
export const AsOfParam = (what: 'post' | 'account'): PropertyDecorator =>
  applyDecorators(
    ApiPropertyOptional({
      format: 'date-time',
      description:
        `The ${what} as the mirror held it at this instant (ISO 8601): its newest version read at or before it ` +
        `(GET /${what}s/:id/history); 404 when the mirror held none then.`,
      example: '2026-12-01T10:00:00Z',
    }),
    IsOptional(),
    IsInstant(),
  );

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** What every version says besides the resource itself. */
class VersionFields {
  @ApiProperty({ description: 'The workspace the resource belongs to.', example: 'default' })
  workspaceId!: string;

  @ApiProperty({ description: 'The post or account id.', example: '66aa01f3c2b1e4d5f6a7b8c9' })
  id!: string;

  @ApiProperty({
    type: 'integer',
    description: "The resource's sequence after this change, as the change feed's entry and the notifications carry it: higher is newer.",
    example: 3,
  })
  sequence!: number;

  @ApiProperty({
    ...DATE_TIME,
    description:
      'When the read of Pozy that wrote this version began (what `asOf` compares with). For a post whose `profileIds` changed ' +
      'because the mirror first held one of its accounts: when that account was written.',
  })
  readAt!: string;

  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The read that wrote this version (as on the timeline).' })
  readId!: string | null;

  @ApiProperty({
    type: [String],
    description:
      'The Pozy event ids this version reflects: the events of the resource received since its previous reconcile began ' +
      'and before this read began. Empty when no event led to the read (an import, a sweep, a resync, a new account).',
    example: ['evt_01HZX3'],
  })
  eventIds!: string[];
}

export class PostVersionResponse extends VersionFields {
  @ApiProperty({ enum: ['post.changed', 'post.deleted'], description: '`post.deleted`: Pozy answered 404, the post is marked deleted.' })
  type!: string;

  @ApiProperty({ type: MirroredPostResponse, description: 'The post exactly as GET /posts/:id answered it after this change.' })
  post!: Record<string, unknown>;
}

export class AccountVersionResponse extends VersionFields {
  @ApiProperty({ enum: ['account.changed', 'account.removed'], description: "`account.removed`: the account left its profile's list." })
  type!: string;

  @ApiProperty({ type: MirroredAccountResponse, description: 'The account exactly as GET /accounts/:id answered it after this change.' })
  account!: Record<string, unknown>;
}

const NEXT_CURSOR = { type: String, nullable: true, description: 'Pass as `cursor` for the next (older) page; null on the last.', example: null };

export class PostHistoryResponse {
  @ApiProperty({ type: [PostVersionResponse], description: 'Newest first.' })
  data!: PostVersionResponse[];

  @ApiProperty(NEXT_CURSOR)
  nextCursor!: string | null;
}

export class AccountHistoryResponse {
  @ApiProperty({ type: [AccountVersionResponse], description: 'Newest first.' })
  data!: AccountVersionResponse[];

  @ApiProperty(NEXT_CURSOR)
  nextCursor!: string | null;
}
