import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { plainToInstance } from 'class-transformer';
import { Pool } from 'pg';
import {
  createPozySyncClient,
  FileCursorStore,
  followChanges,
  FollowedChange,
  FollowEvent,
  partitionOf,
  PostgresCursorStore,
  PozySyncError,
  unwrap,
} from '../packages/client/src';
import { partitionOf as servicePartitionOf } from '../src/changes/partition';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';
import { PostMirrorRepository } from '../src/mirror/posts/post-mirror.repository';
import { PozyPostDto } from '../src/pozy/dto/pozy-post.dto';
import { HARNESS_ADMIN_TOKEN } from './support/harness';
import { waitFor } from './support/service';
import { SimulatorSpec, startSpec } from './support/spec';

/** A follower running in the background, with what it was handed and what it said. */
function follow(options: Omit<Parameters<typeof followChanges>[0], 'onChange' | 'signal' | 'onEvent'>) {
  const changes: FollowedChange[] = [];
  const events: FollowEvent[] = [];
  const stop = new AbortController();
  const done = followChanges({
    waitSeconds: 25,
    ...options,
    signal: stop.signal,
    onChange: (change) => void changes.push(change),
    onEvent: (event) => void events.push(event),
  });
  return { changes, events, stop, done };
}

describe('@pozy-sync/client against the service', () => {
  let harness: SimulatorSpec;
  let pool: Pool;
  let dir: string;
  let profileId: string;
  let accountId: string;
  const world = () => harness.sim.world;
  const client = () => createPozySyncClient({ baseUrl: harness.service.baseUrl });
  const write = async (...ids: string[]) => {
    const read = { readId: randomUUID(), startedAt: new Date(), lastEventAt: null };
    const posts = ids.map((id) => plainToInstance(PozyPostDto, world().getPost(id)));
    await harness.service.app.get(PostMirrorRepository).writeMany(DEFAULT_WORKSPACE, posts, read);
  };
  const head = async () => (await unwrap(client().GET('/changes/head'))).cursor;

  beforeAll(async () => {
    // Pozy's webhooks are not delivered: the tests write the mirror themselves, so they know what changed when.
    harness = await startSpec('client', { simulator: { deliver: false } });
    pool = new Pool({ connectionString: harness.db.url, max: 2 });
    dir = mkdtempSync(join(tmpdir(), 'pozy-client-'));
    profileId = world().createProfile('Client')._id;
    accountId = world().connectAccount(profileId, 'instagram', 'client.insta')._id;
  });

  afterAll(async () => {
    await pool?.end();
    await harness?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers typed data, and errors as PozySyncError values carrying the service’s error code', async () => {
    const post = world().createPost({ content: 'typed', accountIds: [accountId] });
    await write(post._id);
    const answer = await unwrap(client().GET('/posts/{id}', { params: { path: { id: post._id } } }));
    expect(answer).toEqual(await (await fetch(`${harness.service.baseUrl}/posts/${post._id}`)).json());
    expect(answer).toMatchObject({ id: post._id, content: 'typed' });

    // The error side of a call is a typed value too, before unwrap throws it.
    const missing = await client().GET('/posts/{id}', { params: { path: { id: 'never-seen' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toMatchObject({ statusCode: 404, error: 'not_found' });

    const refusals = await Promise.all([
      unwrap(client().GET('/posts', { params: { query: { limit: 100_000 } } })).catch((error: unknown) => error),
      unwrap(client().GET('/admin/tokens')).catch((error: unknown) => error),
      unwrap(createPozySyncClient({ baseUrl: harness.service.baseUrl, token: 'wrong' }).GET('/admin/tokens')).catch((error: unknown) => error),
    ]);
    expect(refusals.map((error) => error instanceof PozySyncError && { status: error.status, code: error.code, retryable: error.retryable })).toEqual(
      [
        { status: 400, code: 'invalid_request', retryable: false },
        { status: 401, code: 'missing_token', retryable: false },
        { status: 403, code: 'invalid_token', retryable: false },
      ],
    );
    expect((refusals[0] as PozySyncError).details).toEqual([{ field: 'limit', problems: [expect.stringContaining('limit')] }]);
    // With the admin token, the same call answers.
    const admin = createPozySyncClient({ baseUrl: harness.service.baseUrl, token: HARNESS_ADMIN_TOKEN });
    expect((await admin.GET('/admin/tokens')).response.status).toBe(200);
  });

  it('bootstraps on the first start, follows, stops on its signal, and resumes from a PostgreSQL cursor store', async () => {
    const existing = world().createPost({ content: 'before the first start', accountIds: [accountId] });
    await write(existing._id);
    const store = new PostgresCursorStore({ pool, name: 'first' });
    expect(await store.load()).toBeUndefined();

    const first = follow({ client: client(), cursorStore: store, types: ['post.changed', 'post.deleted'] });
    await waitFor('the full read', async () => first.events.find((event) => event.kind === 'bootstrapped'));
    expect(first.changes.find((change) => change.id === existing._id)).toMatchObject({
      bootstrap: true,
      type: 'post.changed',
      post: { content: 'before the first start' },
    });
    expect(first.changes.every((change) => change.bootstrap && change.type.startsWith('post.'))).toBe(true);

    world().editPost(existing._id, { content: 'followed' });
    await write(existing._id);
    const followed = await waitFor('the change', async () => first.changes.find((change) => !change.bootstrap && change.id === existing._id));
    expect(followed).toMatchObject({ type: 'post.changed', post: { content: 'followed' }, workspaceId: DEFAULT_WORKSPACE });
    // Stopped in the middle of a 25 s long poll: it answers at once with the cursor it stored.
    const stopping = Date.now();
    first.stop.abort();
    const { cursor } = await first.done;
    expect(Date.now() - stopping).toBeLessThan(10_000);
    expect(cursor).toBe(followed.cursor);
    expect(await store.load()).toBe(followed.cursor);
    expect((await pool.query('SELECT name, cursor FROM pozy_sync_cursor')).rows).toEqual([{ name: 'first', cursor: followed.cursor }]);

    // Changes while it is stopped come when it resumes; nothing it had is handed again, and no full read.
    world().editPost(existing._id, { content: 'while stopped' });
    await write(existing._id);
    const second = follow({ client: client(), cursorStore: store, types: ['post.changed', 'post.deleted'] });
    await waitFor('the change made while stopped', async () => second.changes.find((change) => change.post?.content === 'while stopped'));
    expect(second.events[0]).toEqual({ kind: 'resumed', cursor: followed.cursor });
    expect(second.changes.map((change) => [change.id, change.bootstrap])).toEqual([[existing._id, false]]);
    second.stop.abort();
    await second.done;
  });

  it('never hands a version older than the full read’s, though the feed after the head still holds it', async () => {
    const post = world().createPost({ content: 'v1', accountIds: [accountId] });
    await write(post._id);
    // Between the head and the full read, the post changes twice: the feed after the head holds both versions,
    // the full read only the newer.
    let changedDuringRead = false;
    const intercepting = createPozySyncClient({
      baseUrl: harness.service.baseUrl,
      fetch: async (request) => {
        if (!changedDuringRead && new URL(request.url).pathname === '/posts') {
          changedDuringRead = true;
          world().editPost(post._id, { content: 'v2' });
          await write(post._id);
          world().editPost(post._id, { content: 'v3' });
          await write(post._id);
          await waitFor('both placed', async () =>
            (await pool.query('SELECT 1 FROM change WHERE position IS NULL')).rowCount === 0 ? true : undefined,
          );
        }
        return fetch(request);
      },
    });
    const follower = follow({ client: intercepting, cursorStore: new FileCursorStore(join(dir, 'overlap.json')) });
    await waitFor('the feed past the full read', async () => follower.events.find((event) => event.kind === 'page' && event.skipped > 0));
    const handed = follower.changes.filter((change) => change.id === post._id).map((change) => [change.post?.content, change.bootstrap]);
    expect(handed).toEqual([['v3', true]]);
    follower.stop.abort();
    await follower.done;
    // The file store: the cursor, atomically replaced (no temporary file left beside it).
    expect(await new FileCursorStore(join(dir, 'overlap.json')).load()).toBe(await head());
    expect(readdirSync(dir).filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('backs off while the service is down or answering 503, and follows once it answers again', async () => {
    // A front that refuses the first calls (as a restarting service or a proxy would), then passes them through.
    let refusals = 4;
    const front: Server = createServer((req, res) => {
      if (refusals > 0) {
        refusals -= 1;
        res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: 503, error: 'not_ready', message: 'starting' }));
        return;
      }
      void fetch(`${harness.service.baseUrl}${req.url}`).then(async (answer) => {
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(Buffer.from(await answer.arrayBuffer()));
      });
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const { port } = front.address() as { port: number };
    try {
      const down = follow({
        client: createPozySyncClient({ baseUrl: 'http://127.0.0.1:9' }),
        cursorStore: new FileCursorStore(join(dir, 'down.json')),
        backoff: { initialMs: 20, maxMs: 200 },
      });
      await waitFor('three refused connections', async () =>
        down.events.filter((event) => event.kind === 'retrying').length >= 3 ? true : undefined,
      );
      down.stop.abort();
      expect(await down.done).toEqual({ cursor: undefined });
      expect(existsSync(join(dir, 'down.json'))).toBe(false);

      const busy = follow({
        client: createPozySyncClient({ baseUrl: `http://127.0.0.1:${port}` }),
        cursorStore: new FileCursorStore(join(dir, 'busy.json')),
        backoff: { initialMs: 20, maxMs: 200 },
      });
      await waitFor('the full read', async () => busy.events.find((event) => event.kind === 'bootstrapped'));
      const retries = busy.events.filter((event): event is Extract<FollowEvent, { kind: 'retrying' }> => event.kind === 'retrying');
      expect(retries.map((event) => (event.error as PozySyncError).code)).toEqual(['not_ready', 'not_ready', 'not_ready', 'not_ready']);
      // Each wait is at least half of its doubling step, up to the cap.
      retries.forEach((event, i) => expect(event.delayMs).toBeGreaterThanOrEqual(Math.min(200, 20 * 2 ** i) / 2));
      busy.stop.abort();
      await busy.done;
    } finally {
      await new Promise((resolve) => front.close(resolve));
    }
  });

  it('a cursor the feed no longer keeps (410) starts a full read again, then the feed', async () => {
    const store = new FileCursorStore(join(dir, 'expired.json'));
    await store.save('1');
    const post = world().createPost({ content: 'after the prune', accountIds: [accountId] });
    await write(post._id);
    await waitFor('placed', async () => ((await pool.query('SELECT 1 FROM change WHERE position IS NULL')).rowCount === 0 ? true : undefined));
    await pool.query(`UPDATE change SET changed_at = now() - interval '40 days'`);
    const admin = createPozySyncClient({ baseUrl: harness.service.baseUrl, token: HARNESS_ADMIN_TOKEN });
    await unwrap(admin.POST('/admin/retention'));
    const follower = follow({ client: client(), cursorStore: store });
    const started = await waitFor('the resync', async () => follower.events.find((event) => event.kind === 'bootstrapping'));
    expect(started).toEqual({ kind: 'bootstrapping', reason: 'cursor-expired', expiredCursor: '1', oldestCursor: expect.stringMatching(/^\d+$/) });
    await waitFor('the full read', async () => follower.events.find((event) => event.kind === 'bootstrapped'));
    expect(follower.changes.find((change) => change.id === post._id)).toMatchObject({ bootstrap: true, post: { content: 'after the prune' } });
    follower.stop.abort();
    expect((await follower.done).cursor).toBe(await head());
  });
  it('a named consumer on two partitions: each worker bootstraps and follows only its resources, commits, and resumes', async () => {
    // The client's copy of the partition function is the service's, for any id and count.
    for (let i = 0; i < 500; i += 1) {
      const [id, n] = [randomUUID(), 1 + (i % 64)];
      expect([id, partitionOf('post', id, n), partitionOf('account', id, n)]).toEqual([
        id,
        servicePartitionOf('post', id, n),
        servicePartitionOf('account', id, n),
      ]);
    }
    const admin = createPozySyncClient({ baseUrl: harness.service.baseUrl, token: HARNESS_ADMIN_TOKEN });
    await unwrap(admin.POST('/admin/consumers', { body: { name: 'crm', partitions: 2, types: ['post.changed', 'post.deleted'] } }));
    const posts = Array.from({ length: 12 }, (_, i) => world().createPost({ content: `partitioned ${i}`, accountIds: [accountId] }));
    await write(...posts.map((post) => post._id));
    const options = { client: client(), consumer: 'crm', partitions: 2, types: ['post.changed', 'post.deleted'] as const };
    const workers = [0, 1].map((partition) => follow({ ...options, types: [...options.types], partition }));
    for (const worker of workers) await waitFor('the full read', async () => worker.events.find((event) => event.kind === 'bootstrapped'));
    // Before its first commit a partition has nothing to resume from: each worker read the mirror whole, its half.
    for (const [partition, worker] of workers.entries()) {
      expect(worker.changes.length).toBeGreaterThan(0);
      expect(worker.changes.every((change) => change.bootstrap && partitionOf('post', change.id, 2) === partition)).toBe(true);
    }
    const bootstrapped = new Set(workers.flatMap((worker) => worker.changes.map((change) => change.id)));
    for (const post of posts) expect(bootstrapped.has(post._id)).toBe(true);

    for (const post of posts) world().editPost(post._id, { content: `changed ${post._id}` });
    await write(...posts.map((post) => post._id));
    await waitFor('every change, in its partition', async () =>
      workers.flatMap((worker) => worker.changes.filter((change) => !change.bootstrap)).length === posts.length ? true : undefined,
    );
    for (const [partition, worker] of workers.entries()) {
      expect(worker.changes.filter((change) => !change.bootstrap).every((change) => partitionOf('post', change.id, 2) === partition)).toBe(true);
    }
    const head = (await unwrap(client().GET('/changes/head'))).cursor;
    await waitFor('both partitions committed at the head', async () => {
      const consumer = await unwrap(admin.GET('/admin/consumers/{name}', { params: { path: { name: 'crm' } } }));
      return consumer.positions.every((position) => position.cursor === head && position.committedAt !== null) ? consumer : undefined;
    });
    for (const worker of workers) {
      worker.stop.abort();
      await worker.done;
    }

    // Restarted, a worker resumes from the service's position: no full read, only what changed meanwhile.
    world().editPost(posts[0]._id, { content: 'while the workers were stopped' });
    await write(posts[0]._id);
    const owner = partitionOf('post', posts[0]._id, 2);
    const again = follow({ ...options, types: [...options.types], partition: owner });
    const change = await waitFor('the change made while stopped', async () =>
      again.changes.find((c) => c.post?.content === 'while the workers were stopped'),
    );
    expect(change.bootstrap).toBe(false);
    expect(again.events.some((event) => event.kind === 'bootstrapping')).toBe(false);
    expect(again.changes).toHaveLength(1);
    again.stop.abort();
    await again.done;
  });
  it('packs with `npm pack`: the tarball holds the built client, its types and its README, and works where it is unpacked', async () => {
    const root = join(__dirname, '..');
    const out = mkdtempSync(join(tmpdir(), 'pozy-client-pack-'));
    try {
      const [packed] = JSON.parse(
        execFileSync('npm', ['pack', '--json', '--pack-destination', out, '-w', '@pozy-sync/client'], {
          cwd: root,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }),
      ) as Array<{ filename: string; files: Array<{ path: string }> }>;
      const files = packed.files.map((file) => file.path).sort();
      expect(files).toEqual(
        expect.arrayContaining(['README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/follow-changes.js', 'dist/schema.d.ts']),
      );
      expect(files.filter((file) => !file.startsWith('dist/') && !['README.md', 'package.json'].includes(file))).toEqual([]);
      execFileSync('tar', ['-xzf', join(out, packed.filename), '-C', out]);
      // Unpacked on its own (its one dependency, openapi-fetch, from this repository's node_modules), it reads the feed's head.
      const program = `require(${JSON.stringify(join(out, 'package'))}).createPozySyncClient({ baseUrl: process.argv[1] }).GET('/changes/head').then((r) => console.log(JSON.stringify(r.data)))`;
      // Asynchronously: the service it calls runs in this process.
      const { stdout: printed } = await promisify(execFile)(process.execPath, ['-e', program, harness.service.baseUrl], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', NODE_PATH: join(root, 'node_modules') },
      });
      expect(JSON.parse(printed)).toEqual({ cursor: await head() });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
