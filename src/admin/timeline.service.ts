import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { AppConfig } from '../config/app-config';
import { isStorableText } from '../common/storable-text';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';
import { WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { TimelineEntryResponse, TimelineQuery, TimelineResponse } from './dto/timeline.dto';
import { ENTRY_KINDS, TimelinePosition, TimelineRepository, TimelineSubject } from './timeline.repository';

const DEFAULT_LIMIT = 100;
const DAY_MS = 86_400_000;

/** Timelines of posts and profiles, a page at a time, after an opaque cursor (the last entry's place). */
@Injectable()
export class TimelineService {
  constructor(
    private readonly repository: TimelineRepository,
    private readonly workspaces: WorkspaceRegistry,
    private readonly config: AppConfig,
  ) {}

  async page(subject: TimelineSubject, query: TimelineQuery): Promise<TimelineResponse> {
    const workspaceId = query.workspace ?? DEFAULT_WORKSPACE;
    if (!this.workspaces.get(workspaceId)) throw new ApiError('unknown_workspace', `No workspace ${JSON.stringify(workspaceId)} is mirrored here`);
    const limit = query.limit ?? DEFAULT_LIMIT;
    // The history's retention prunes only versions read before its window: a read since then that has none changed nothing.
    const versionsKeptSince = new Date(Date.now() - this.config.retention.historyRetentionDays * DAY_MS);
    const rows = await this.repository.page(workspaceId, subject, decodePosition(query.cursor), limit, versionsKeptSince);
    const entries = rows.slice(0, limit);
    const last = entries.at(-1);
    return {
      workspaceId,
      resource: `${subject.type}:${subject.id}`,
      entries: entries.map((row): TimelineEntryResponse => ({ at: row.at.toISOString(), kind: ENTRY_KINDS[row.rank], traceId: null, ...row.entry })),
      nextCursor: rows.length > limit && last ? encodePosition(last) : null,
    };
  }
}

function encodePosition(position: TimelinePosition): string {
  return Buffer.from(JSON.stringify({ at: position.at.toISOString(), rank: position.rank, key: position.key })).toString('base64url');
}

function decodePosition(cursor: string | undefined): TimelinePosition | null {
  if (cursor === undefined) return null;
  try {
    const { at, rank, key } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { at?: unknown; rank?: unknown; key?: unknown };
    const when = typeof at === 'string' ? new Date(at) : null;
    if (when && !Number.isNaN(when.getTime()) && Number.isInteger(rank) && typeof key === 'string' && key.length <= 200 && isStorableText(key)) {
      return { at: when, rank: rank as number, key };
    }
  } catch {
    // fall through
  }
  throw new ApiError('invalid_query', 'cursor is not one this service returned (use nextCursor as given)');
}
