// A pozy-sync change-feed consumer: keeps a local copy of every mirrored post and account in one JSON file, and
// resumes from the cursor stored in it. Plain Node.js 20, no dependency.
//   POZY_SYNC_URL=http://localhost:3000 STATE_FILE=feed-state.json node examples/feed-consumer.mjs
//   POZY_SYNC_TOKEN: a read token, sent as `Authorization: Bearer ...` (optional: only if pozy-sync asks for one).
// A real consumer keeps its copy in its own database and stores the cursor in the transaction that applies a page;
// a file replaced atomically after each page gives the same guarantee here.
import { open, readFile, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

const BASE_URL = (process.env.POZY_SYNC_URL ?? 'http://localhost:3000').replace(/\/+$/, '');
const TOKEN = process.env.POZY_SYNC_TOKEN;
const STATE_FILE = process.env.STATE_FILE ?? 'feed-state.json';
const WAIT_S = 25; // long poll: pozy-sync answers as soon as a change comes, or empty after this
const PAGE = 1000;
const BACKOFF_MAX_MS = 30_000;

const headers = TOKEN ? { authorization: `Bearer ${TOKEN}` } : {};
const log = (line) => console.log(`${new Date().toISOString()} ${line}`);

// Stopping: the request in flight is abandoned (nothing of it was applied); a page being applied is stored first.
let stopping = false;
let inFlight;
let wakeUp;
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    stopping = true;
    inFlight?.abort();
    wakeUp?.();
  });
}
/** Waits `ms`, or less if asked to stop. */
const pause = (ms) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    wakeUp = () => (clearTimeout(timer), resolve());
  });

class HttpError extends Error {
  constructor(status, body) {
    super(`${status} ${body?.error ?? ''} ${body?.message ?? ''}`.trim());
    this.status = status;
    this.body = body;
  }
}

async function get(path, timeoutMs) {
  inFlight = new AbortController();
  const signal = AbortSignal.any([inFlight.signal, AbortSignal.timeout(timeoutMs)]);
  try {
    const response = await fetch(`${BASE_URL}${path}`, { headers, signal });
    const body = await response.json().catch(() => undefined);
    if (!response.ok) throw new HttpError(response.status, body);
    return body;
  } finally {
    inFlight = undefined;
  }
}

/** Network errors, timeouts, 429 and 5xx are worth retrying; other answers (401, 400) need a person. */
const retryable = (error) => !(error instanceof HttpError) || error.status === 429 || error.status >= 500;

/** Calls `fn` until it succeeds, waiting 1 s, 2 s, 4 s ... (at most 30 s, with jitter) after each retryable failure. */
async function withRetry(what, fn) {
  for (let failures = 0; ; failures += 1) {
    try {
      return await fn();
    } catch (error) {
      if (stopping) throw error;
      if (!retryable(error)) throw error;
      const delay = Math.min(BACKOFF_MAX_MS, 1000 * 2 ** Math.min(failures, 5)) * (0.5 + Math.random() / 2);
      log(`${what} failed (${error.cause?.code ?? error.message}); retrying in ${Math.round(delay)} ms`);
      await pause(delay);
      if (stopping) throw error;
    }
  }
}

/**
 * Keeps the newest version of a resource: `sequence` grows with each change of a post (or account), so a page applied
 * twice, or a change the full read already showed, is ignored.
 */
function keep(map, resource) {
  const had = map[resource.id];
  if (had === undefined || had.sequence < resource.sequence) map[resource.id] = resource;
}

/** Replaces the state file atomically: a crash leaves the old file or the new one, never a part of either. */
async function store(state) {
  const temp = join(dirname(STATE_FILE), `.${basename(STATE_FILE)}.tmp`);
  const file = await open(temp, 'w');
  try {
    await file.writeFile(JSON.stringify(state));
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, STATE_FILE);
  // The rename itself is durable once the directory is synced (not possible on every platform).
  const dir = await open(dirname(STATE_FILE), 'r').catch(() => undefined);
  await dir?.sync().catch(() => undefined);
  await dir?.close();
}

async function load() {
  try {
    return JSON.parse(await readFile(STATE_FILE, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

async function readAll(path, into) {
  let cursor;
  do {
    const query = cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const page = await withRetry(`GET ${path}`, () => get(`${path}${query}`, 60_000));
    for (const resource of page.data) keep(into, resource);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined && !stopping);
}

/**
 * A full read of the mirror. The head cursor is taken FIRST: a post changed while the read pages past it is then
 * both in the read (maybe old, maybe new) and in the feed after that cursor, so following the feed from there brings
 * it up to date. Taken after the read, the head would already be past such a change and the copy would keep the
 * older version for good. Changes the read already saw come again from the feed too; `keep` ignores them.
 */
async function fullRead() {
  const { cursor } = await withRetry('GET /changes/head', () => get('/changes/head', 30_000));
  const state = { cursor, posts: {}, accounts: {} };
  await readAll('/posts?includeDeleted=true&limit=500', state.posts);
  await readAll('/accounts?includeRemoved=true&limit=500', state.accounts);
  if (stopping) return undefined;
  await store(state);
  log(`full read: ${Object.keys(state.posts).length} posts, ${Object.keys(state.accounts).length} accounts; following after cursor ${cursor}`);
  return state;
}

async function follow(state) {
  while (!stopping) {
    let page;
    try {
      page = await withRetry('GET /changes', () => get(`/changes?after=${state.cursor}&limit=${PAGE}&wait=${WAIT_S}`, (WAIT_S + 30) * 1000));
    } catch (error) {
      if (stopping) return state;
      if (error instanceof HttpError && error.status === 410) {
        // Our cursor is older than the changes pozy-sync keeps (CHANGE_RETENTION_DAYS): start again from a full read.
        log(`cursor ${state.cursor} expired (oldest kept ${error.body?.details?.oldestCursor}); resynchronising`);
        const fresh = await fullRead();
        if (fresh === undefined) return state;
        state = fresh;
        continue;
      }
      throw error;
    }
    if (page.data.length === 0 && page.nextCursor === state.cursor) continue;
    let posts = 0;
    let accounts = 0;
    for (const change of page.data) {
      if (change.post) {
        posts += 1;
        keep(state.posts, change.post);
      } else if (change.account) {
        accounts += 1;
        keep(state.accounts, change.account);
      }
    }
    state.cursor = page.nextCursor;
    // Stored after every page, before anything else: a kill from here on resumes after this page.
    await store(state);
    log(`applied ${page.data.length} changes (${posts} posts, ${accounts} accounts); cursor ${state.cursor}`);
  }
  return state;
}

async function main() {
  let state = await load();
  if (state === undefined) {
    log(`no state in ${STATE_FILE}: reading the mirror whole from ${BASE_URL}`);
    state = await fullRead();
  } else {
    log(`resuming from cursor ${state.cursor} (${Object.keys(state.posts).length} posts, ${Object.keys(state.accounts).length} accounts)`);
  }
  if (state !== undefined) state = await follow(state);
  return state;
}

main().then(
  (state) => log(state === undefined ? 'stopped before a full read was stored' : `stopped at cursor ${state.cursor}`),
  async (error) => {
    // A stop that abandoned a request: the state file holds the last page stored, which is where the next start resumes.
    if (stopping) return log(`stopped at cursor ${(await load())?.cursor ?? '(none: no full read stored yet)'}`);
    console.error(`feed consumer: ${error.message}`);
    process.exit(1);
  },
);
