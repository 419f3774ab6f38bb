import { ApiProperty, ApiPropertyOptional, ApiPropertyOptions } from '@nestjs/swagger';
import { ALL_WORKSPACES } from '../../common/read-scope';

const DATE_TIME = { type: String, format: 'date-time' } as const;

const WORKSPACES = {
  description: '`"*"`: every workspace; otherwise the workspace ids it reads.',
  oneOf: [
    { type: 'string', enum: [ALL_WORKSPACES] },
    { type: 'array', items: { type: 'string' } },
  ],
  example: ['acme-eu', 'acme-us'],
};

const CONSUMERS: ApiPropertyOptions = {
  type: [String],
  description: 'Only for a token limited to named consumers: it reads `GET /changes?consumer=` for these alone, and commits them.',
  example: ['crm-sync'],
};

/** A read token made through the API, as listed: never the token, nor its hash. */
export class ReadTokenResponse {
  @ApiProperty({ format: 'uuid', example: '3b2c6a1e-8d4f-4e5a-9b7c-2d1e0f9a8b7c' })
  id!: string;

  @ApiProperty({ example: 'CRM sync (EU)' })
  name!: string;

  @ApiProperty(WORKSPACES)
  workspaces!: string[] | typeof ALL_WORKSPACES;

  @ApiPropertyOptional(CONSUMERS)
  consumers?: string[];

  @ApiProperty(DATE_TIME)
  createdAt!: Date;

  @ApiProperty({
    ...DATE_TIME,
    nullable: true,
    description: 'When it last read, within a minute (written at most once a minute); null while never used.',
  })
  lastUsedAt!: Date | null;
}

/** `201` of `POST /admin/tokens`: the only answer that carries the token. */
export class CreatedReadTokenResponse {
  @ApiProperty({ format: 'uuid', description: 'What `DELETE /admin/tokens/{id}` takes.', example: '3b2c6a1e-8d4f-4e5a-9b7c-2d1e0f9a8b7c' })
  id!: string;

  @ApiProperty({ example: 'CRM sync (EU)' })
  name!: string;

  @ApiProperty(WORKSPACES)
  workspaces!: string[] | typeof ALL_WORKSPACES;

  @ApiPropertyOptional(CONSUMERS)
  consumers?: string[];

  @ApiProperty(DATE_TIME)
  createdAt!: Date;

  @ApiProperty({
    description:
      'The token: `Authorization: Bearer <token>` on the query and status endpoints. Shown this once (only its SHA-256 is stored): keep it.',
    example: 'pzs_4q3Zb2cM1kYH0vR8XgN5eLwT7uJ9sA6dP2fQ0iO3hBk',
  })
  token!: string;
}

export class ReadTokenPageResponse {
  @ApiProperty({ type: [ReadTokenResponse], description: 'Live tokens, newest first.' })
  data!: ReadTokenResponse[];

  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last.' })
  nextCursor!: string | null;
}

export class DeletedReadTokenResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ type: Boolean, enum: [true], example: true })
  deleted!: true;

  @ApiProperty({
    description:
      'Whether, now that it is gone, reads are open to anyone on this replica: API_TOKENS unset (or `none`) and no token made through the API live any more. ' +
      'Make the next token before deleting the last one to keep the reads closed.',
    example: false,
  })
  readsOpen!: boolean;
}
