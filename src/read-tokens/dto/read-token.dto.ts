import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  MaxLength,
  ValidateBy,
  ValidationArguments,
} from 'class-validator';
import { LimitParam } from '../../common/query-params';
import { ALL_WORKSPACES, isWorkspaceId, Workspaces } from '../../common/read-scope';
import { WORKSPACE_ID } from '../../common/workspace-id';

export const MAX_NAME_LENGTH = 100;
/** More than this is a token for (nearly) every workspace: `"*"` says so, and covers the ones created later. */
export const MAX_WORKSPACES = 100;
const WORKSPACE_ID_RULE = '1 to 63 lower-case letters, digits or hyphens, the first not a hyphen';

/** A value quoted in a message, cut short: the message must stay readable whatever was sent. */
const quoted = (value: string) => JSON.stringify(value.length > 70 ? `${value.slice(0, 70)}…` : value);

const describe = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;

/** What is wrong with a `workspaces` value, naming the item at fault; undefined when nothing is. */
export function workspacesProblem(value: unknown): string | undefined {
  if (value === ALL_WORKSPACES) return undefined;
  if (!Array.isArray(value)) return 'workspaces must be "*" (every workspace) or a list of workspace ids';
  if (value.length === 0) return 'workspaces must not be empty: list at least one workspace id, or give "*" for every workspace';
  if (value.length > MAX_WORKSPACES) return `workspaces must hold at most ${MAX_WORKSPACES} ids; "*" reads every workspace`;
  const seen = new Set<string>();
  for (const [i, item] of (value as unknown[]).entries()) {
    if (item === ALL_WORKSPACES) return `workspaces[${i}] is "*": give "*" alone, not in a list, for every workspace`;
    if (!isWorkspaceId(item)) {
      const got = typeof item === 'string' ? quoted(item) : describe(item);
      return `workspaces[${i}] must be a workspace id (${WORKSPACE_ID_RULE}), not ${got}`;
    }
    if (seen.has(item)) return `workspaces[${i}] repeats ${quoted(item)}`;
    seen.add(item);
  }
  return undefined;
}

/** `"*"`, or a list of 1 to 100 distinct workspace ids. */
const IsWorkspaces = () =>
  ValidateBy({
    name: 'isWorkspaces',
    validator: {
      validate: (value: unknown) => workspacesProblem(value) === undefined,
      defaultMessage: (args?: ValidationArguments) => workspacesProblem(args?.value) ?? 'workspaces is invalid',
    },
  });

/** `POST /admin/tokens`. */
export class CreateReadTokenDto {
  @ApiProperty({
    description: 'For people: which client holds the token. Need not be unique (a client rotating holds two for a while).',
    minLength: 1,
    maxLength: MAX_NAME_LENGTH,
    example: 'CRM sync (EU)',
  })
  @IsString()
  @MaxLength(MAX_NAME_LENGTH)
  @Matches(/\S/, { message: 'name must hold a character other than white space' })
  name!: string;

  // Whether each workspace exists is not checked: the workspace registry, being built apart, is where that belongs.
  @ApiProperty({
    description:
      'What the token reads: `"*"` for every workspace (those created later too), or a list of workspace ids. ' +
      `An id is ${WORKSPACE_ID_RULE} (\`acme-eu\`; a deployment's single workspace is \`default\`); at most ${MAX_WORKSPACES}, no repeats.`,
    oneOf: [
      { type: 'string', enum: [ALL_WORKSPACES] },
      { type: 'array', items: { type: 'string', pattern: WORKSPACE_ID.source }, minItems: 1, maxItems: MAX_WORKSPACES, uniqueItems: true },
    ],
    example: ['acme-eu', 'acme-us'],
  })
  @IsWorkspaces()
  workspaces!: Workspaces;

  @ApiPropertyOptional({
    type: [String],
    description:
      'Limits the token to these named consumers (POST /admin/consumers): it reads only `GET /changes?consumer=` for them (and ' +
      '`GET /changes/head`), and commits them. Absent: every read the workspaces allow.',
    example: ['crm-sync'],
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_WORKSPACES)
  @ArrayUnique()
  @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, { each: true, message: 'consumers must hold consumer names (1 to 63 lower-case letters, digits, _ or -)' })
  consumers?: string[];
}

/** `GET /admin/tokens`. */
export class ListReadTokensQuery {
  @LimitParam(100, 'Tokens per page, newest first.')
  limit?: number;

  @ApiPropertyOptional({
    description: '`nextCursor` of the previous page, as given.',
    example: 'eyJjIjoiMjAyNi0xMi0wMVQxMjowMDowMC4wMDBaIiwiaSI6Ii4uLiJ9',
  })
  @IsOptional()
  @IsString()
  cursor?: string;
}

export class ReadTokenIdParams {
  @ApiProperty({
    format: 'uuid',
    description: 'The id `POST /admin/tokens` answered (not the token).',
    example: '3b2c6a1e-8d4f-4e5a-9b7c-2d1e0f9a8b7c',
  })
  @IsUUID('4', { message: 'id must be a token id (a UUID), not the token itself' })
  // UUIDs are read in either case (RFC 4122).
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
  id!: string;
}
