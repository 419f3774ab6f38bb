import { ApiProperty } from '@nestjs/swagger';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** A social account as the mirror holds it (a removed one with `removedAt`). */
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

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'The latest event this row reflects.' })
  lastEventAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, description: 'The last read from Pozy.' })
  syncedAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'When the mirror learnt Pozy no longer lists it.' })
  removedAt!: Date | null;
}

export class AccountPageResponse {
  @ApiProperty({ type: [MirroredAccountResponse], description: 'Ordered by id.' })
  data!: MirroredAccountResponse[];

  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last.', example: null })
  nextCursor!: string | null;
}
