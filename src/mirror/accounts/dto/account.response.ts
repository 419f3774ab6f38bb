import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/**
 * A social account as the mirror holds it (a removed one with `removedAt`): every field of Pozy's answer under Pozy's
 * names, fields this document does not list included, except `id` for `_id` and `profileId` always the plain id; then
 * the mirror's own fields. `fields=` asks for fewer.
 */
export class MirroredAccountResponse {
  @ApiProperty({ description: 'The Pozy id.', example: '66a9ffee00112233445566bb' })
  id!: string;

  @ApiProperty({ example: '66a9ffee00112233445566aa' })
  profileId!: string;

  @ApiProperty({ example: 'instagram' })
  platform!: string;

  @ApiProperty({ type: String, nullable: true, example: 'pozy.demo' })
  username!: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'Pozy Demo' })
  displayName!: string | null;

  @ApiProperty()
  isActive!: boolean;

  @ApiProperty({ description: 'Waiting for the user to reconnect it.' })
  needsReconnection!: boolean;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'https://cdn.pozy.ai/avatars/pozy-demo.jpg' })
  profilePicture?: string | null;

  @ApiPropertyOptional({ example: 'https://www.instagram.com/pozy.demo/' })
  profileUrl?: string;

  @ApiProperty({ type: Boolean, nullable: true, description: "Pozy's `enabled`; null when Pozy did not say." })
  enabled!: boolean | null;

  @ApiPropertyOptional({ description: 'The account this one belongs to (a page of a business account, say).' })
  parentAccountId?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({ description: "With Pozy's analytics add-on.", example: 1250 })
  followersCount?: number;

  @ApiPropertyOptional({ ...DATE_TIME, description: "With Pozy's analytics add-on." })
  followersLastUpdated?: string;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'The latest event this row reflects.' })
  lastEventAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, description: 'The last read from Pozy.' })
  syncedAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'When the mirror learnt Pozy no longer lists it.' })
  removedAt!: Date | null;

  @ApiProperty({ description: "The mirror's: counts the changes of the mirrored account (the version notifications carry).", example: 2 })
  sequence!: number;
}

export class AccountPageResponse {
  @ApiProperty({ type: [MirroredAccountResponse], description: 'Ordered by id.' })
  data!: MirroredAccountResponse[];

  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last.', example: null })
  nextCursor!: string | null;
}
