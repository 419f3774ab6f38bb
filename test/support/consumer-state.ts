import { readFileSync } from 'node:fs';

/** A post or account as the example consumer (examples/feed-consumer.mjs) keeps it. */
export type Resource = Record<string, unknown> & { id: string; sequence: number };

/** The example consumer's state file: its cursor and its copy. */
export interface ConsumerState {
  cursor: string;
  posts: Record<string, Resource>;
  accounts: Record<string, Resource>;
}

/** The state file as the consumer last replaced it; undefined before its first full read is stored. */
export function readConsumerState(file: string): ConsumerState | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ConsumerState;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Bookkeeping that a read moves without changing the resource (so without a feed entry): when it was last read, and
 * the newest event it reflects. Everything else must be equal.
 */
export const withoutBookkeeping = (body: Record<string, unknown> | undefined) =>
  body && Object.fromEntries(Object.entries(body).filter(([key]) => key !== 'syncedAt' && key !== 'lastEventAt'));
