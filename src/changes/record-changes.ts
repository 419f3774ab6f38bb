import type { Tracing } from '../tracing/tracing.service';

/** What each kind of change is called, in the feed and in notifications alike. */
export const CHANGE_TYPES = ['post.changed', 'post.deleted', 'account.changed', 'account.removed'] as const;
export type ChangeType = (typeof CHANGE_TYPES)[number];

/** A feed entry as the write that appended it answers it (for its span: tracing on), before it has a position. */
export interface RecordedEntry {
  /** The `change` row's id (not its position, which the sequencer gives it once the write has committed). */
  id: string;
  workspaceId: string;
  type: ChangeType;
  resourceId: string;
  sequence: number;
}

/**
 * A `feed entry` span per entry a write appended, under the write's span (the active one). The entry was inserted in
 * the write's own statement, so the span times nothing of its own: it names the entry (its type, its resource, the
 * `change` row it is until the sequencer gives it a position).
 */
export async function traceFeedEntries(tracing: Tracing, entries: readonly RecordedEntry[]): Promise<void> {
  for (const entry of entries) {
    const attributes = {
      workspaceId: entry.workspaceId,
      'pozy_sync.feed.type': entry.type,
      // The resource's key is the type's first word: `post:<id>` or `account:<id>`, as the notify spans name it.
      'pozy_sync.resource': `${entry.type.split('.')[0]}:${entry.resourceId}`,
      'pozy_sync.feed.sequence': entry.sequence,
      'pozy_sync.feed.entry_id': entry.id,
    };
    await tracing.span('feed entry', { attributes }, async () => undefined);
  }
}
