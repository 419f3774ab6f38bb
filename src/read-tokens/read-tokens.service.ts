import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { readsOpen } from '../common/read-access';
import { Workspaces } from '../common/read-scope';
import { AppConfig } from '../config/app-config';
import { ReadTokenRegistry } from './read-token-registry.service';
import { ReadTokenPosition, ReadTokenRepository, ReadTokenSummary } from './read-token.repository';
import { newReadToken, tokenDigest } from './read-token-secret';

const DEFAULT_LIMIT = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A page's cursor: the last token's (createdAt, id), opaque to the client. */
function encodeCursor(last: ReadTokenSummary): string {
  return Buffer.from(JSON.stringify({ c: last.createdAt.toISOString(), i: last.id })).toString('base64url');
}

function decodeCursor(cursor: string | undefined): ReadTokenPosition | null {
  if (cursor === undefined) return null;
  try {
    const { c, i } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { c?: unknown; i?: unknown };
    const createdAt = typeof c === 'string' ? new Date(c) : undefined;
    // Only what encodeCursor writes: an ISO time that reads back as itself, and a token id.
    if (createdAt && !Number.isNaN(createdAt.getTime()) && createdAt.toISOString() === c && typeof i === 'string' && UUID.test(i)) {
      return { createdAt, id: i };
    }
  } catch {
    // fall through
  }
  const problem = 'cursor is not one this service returned (use nextCursor as given)';
  throw new ApiError('invalid_request', `Invalid request: cursor: ${problem}`, [{ field: 'cursor', problems: [problem] }]);
}

/** Read tokens made through the admin API: made, listed, deleted; the registry honours them on every replica. */
@Injectable()
export class ReadTokensService {
  private readonly logger = new Logger(ReadTokensService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly tokens: ReadTokenRepository,
    private readonly registry: ReadTokenRegistry,
  ) {}

  /** The token is answered here, once; only its hash is kept. It reads on this replica before this answers. */
  async create(
    name: string,
    workspaces: Workspaces,
    consumers?: readonly string[],
  ): Promise<Omit<ReadTokenSummary, 'lastUsedAt'> & { token: string }> {
    const token = newReadToken();
    const tokenHash = tokenDigest(token);
    const created = await this.tokens.create({ id: randomUUID(), name, tokenHash, workspaces, consumers });
    const limited = created.consumers ? { consumers: created.consumers } : {};
    await this.registry.changed({ created: { id: created.id, tokenHash, workspaces: created.workspaces, ...limited, lastUsedAt: null } });
    this.logger.log(`Read token ${created.id} made (${created.workspaces === '*' ? 'every workspace' : created.workspaces.join(', ')})`);
    return { id: created.id, name: created.name, workspaces: created.workspaces, ...limited, createdAt: created.createdAt, token };
  }

  async list(limit = DEFAULT_LIMIT, cursor?: string): Promise<{ data: ReadTokenSummary[]; nextCursor: string | null }> {
    const rows = await this.tokens.list(limit + 1, decodeCursor(cursor));
    const data = rows.slice(0, limit);
    return { data, nextCursor: rows.length > limit ? encodeCursor(data[data.length - 1]) : null };
  }

  /** Refused on this replica before this answers, on the others within about a second. */
  async delete(id: string): Promise<{ id: string; deleted: true; readsOpen: boolean }> {
    if (!(await this.tokens.delete(id))) throw new ApiError('not_found', `No live read token ${id}`);
    await this.registry.changed({ deleted: id });
    this.logger.log(`Read token ${id} deleted`);
    return { id, deleted: true, readsOpen: readsOpen(this.config, this.registry) };
  }
}
