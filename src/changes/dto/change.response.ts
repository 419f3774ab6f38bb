import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { CHANGE_TYPES } from '../record-changes';

const CURSOR = { description: 'Opaque: hand it back as `after`.', example: '1042' } as const;

export class ChangeResponse {
  @ApiProperty({ ...CURSOR, description: "This change's place in the feed: `after` it, the feed goes on with the next one." })
  cursor!: string;

  @ApiProperty({ description: 'The workspace the post or account belongs to.', example: 'default' })
  workspaceId!: string;

  @ApiProperty({ enum: CHANGE_TYPES, example: 'post.changed' })
  type!: string;

  @ApiProperty({ description: 'The post or account id.', example: '66aa01f3c2b1e4d5f6a7b8c9' })
  id!: string;

  @ApiProperty({
    type: 'integer',
    description: "The resource's sequence after this change (as in notifications): within one resource, a higher one is newer.",
    example: 3,
  })
  sequence!: number;

  @ApiProperty({ type: String, format: 'date-time', description: 'When the mirror changed.' })
  changedAt!: string;

  @ApiPropertyOptional({
    allOf: [{ $ref: '#/components/schemas/MirroredPostResponse' }],
    description: '`post.*`: the post exactly as GET /posts/:id answered it right after this change.',
  })
  post?: Record<string, unknown>;

  @ApiPropertyOptional({
    allOf: [{ $ref: '#/components/schemas/MirroredAccountResponse' }],
    description: '`account.*`: the account exactly as GET /accounts/:id answered it right after this change.',
  })
  account?: Record<string, unknown>;
}

export class ChangePageResponse {
  @ApiProperty({ type: [ChangeResponse], description: 'In the order the changes committed.' })
  data!: ChangeResponse[];

  @ApiProperty({
    ...CURSOR,
    description:
      'Where to go on from: the next call`s `after`. Always set, also when `data` is empty (a filter may have skipped ' +
      'changes); store it once you have applied `data`.',
  })
  nextCursor!: string;
}

export class ChangeHeadResponse {
  @ApiProperty({
    ...CURSOR,
    description: 'The newest change: follow the feed `after` this to see only what changes from now on.',
  })
  cursor!: string;
}
