// A pozy-sync change-feed consumer built on @pozy-sync/client: keeps a local copy of every mirrored post and account
// in one JSON file, with the cursor beside it, and resumes from there.
//   POZY_SYNC_URL=http://localhost:3000 STATE_FILE=feed-state.json node examples/feed-consumer.mjs
//   POZY_SYNC_TOKEN: a read token, sent as `Authorization: Bearer ...` (optional: only if pozy-sync asks for one).
// followChanges does the feed's work: the full read on the first start and after a 410, the long poll, the backoff
// while pozy-sync is down, and never an older version of a resource after a newer one. This file only keeps the copy.
// A real consumer keeps its copy in its own database and stores the cursor in the transaction that applies a page
// (PostgresCursorStore.saveIn); here the copy and the cursor are replaced together in one atomic file write.
import { readFile } from 'node:fs/promises';
import { createPozySyncClient, followChanges, writeFileAtomically } from '@pozy-sync/client';

const BASE_URL = process.env.POZY_SYNC_URL ?? 'http://localhost:3000';
const STATE_FILE = process.env.STATE_FILE ?? 'feed-state.json';
const log = (line) => console.log(`${new Date().toISOString()} ${line}`);

const stop = new AbortController();
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => stop.abort());

async function load() {
  try {
    return JSON.parse(await readFile(STATE_FILE, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

const stored = await load();
let copy = { posts: stored?.posts ?? {}, accounts: stored?.accounts ?? {} };
const count = () => `${Object.keys(copy.posts).length} posts, ${Object.keys(copy.accounts).length} accounts`;

/** A cursor store that writes the copy with the cursor: a kill leaves both as they were after the same page. */
const store = {
  load: async () => stored?.cursor,
  save: (cursor) => writeFileAtomically(STATE_FILE, JSON.stringify({ cursor, ...copy })),
};

if (stored === undefined) log(`no state in ${STATE_FILE}: reading the mirror whole from ${BASE_URL}`);
const { cursor } = await followChanges({
  client: createPozySyncClient({ baseUrl: BASE_URL, token: process.env.POZY_SYNC_TOKEN }),
  cursorStore: store,
  signal: stop.signal,
  onChange(change) {
    const into = change.post ? copy.posts : copy.accounts;
    const resource = change.post ?? change.account;
    const had = into[change.id];
    // followChanges never hands an older version after a newer one; say so loudly if it ever did.
    if (had !== undefined && had.sequence > resource.sequence) log(`older version handed: ${change.id} ${resource.sequence} after ${had.sequence}`);
    if (had === undefined || had.sequence < resource.sequence) into[change.id] = resource;
  },
  onEvent(event) {
    if (event.kind === 'resumed') log(`resuming from cursor ${event.cursor} (${count()})`);
    else if (event.kind === 'bootstrapping') {
      // The copy is rebuilt from the full read: what the old one held may have been deleted since.
      copy = { posts: {}, accounts: {} };
      if (event.reason === 'cursor-expired') log(`cursor ${event.expiredCursor} expired (oldest kept ${event.oldestCursor}); resynchronising`);
    } else if (event.kind === 'bootstrapped')
      log(`full read: ${event.posts} posts, ${event.accounts} accounts; following after cursor ${event.cursor}`);
    else if (event.kind === 'page')
      log(`applied ${event.changes} changes (${event.posts} posts, ${event.accounts} accounts); cursor ${event.cursor}`);
    else if (event.kind === 'retrying')
      log(`${event.what} failed (${event.error.cause?.code ?? event.error.message}); retrying in ${event.delayMs} ms`);
  },
}).catch((error) => {
  console.error(`feed consumer: ${error.message}`);
  process.exit(1);
});
log(cursor === undefined ? 'stopped before a full read was stored' : `stopped at cursor ${cursor}`);
