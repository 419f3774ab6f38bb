import { ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import type { FloodCommand, FloodTally } from '../bench/anonymous-flood';
import { ChangesService } from '../src/changes/changes.service';
import { backlog } from './support/harness';
import { deliver, postEvent } from './support/pozy-events';
import { waitFor } from './support/service';
import { StatementCounter } from './support/statement-counter';
import { SimulatorSpec, startSpec } from './support/spec';

/** The reviewer's workspace: 91,000 posts, 95,000 events, the production pool of 20 connections. */
const POSTS = 91_000;
const EVENTS = 95_000;
const STATUS_CLIENTS = 60;
const LONG_POLLS = 600;
const SEARCH_CLIENTS = 20;
/** Webhooks a phase delivers, a few at a time, as Pozy does for a busy workspace. */
const WEBHOOKS = 150;
const WEBHOOKS_AT_ONCE = 5;

interface Ack {
  status: number;
  ms: number;
  spooled: boolean;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

const summary = (acks: Ack[]) => {
  const ms = acks.map((a) => a.ms);
  return `p50 ${percentile(ms, 50).toFixed(0)} ms, p99 ${percentile(ms, 99).toFixed(0)} ms`;
};

const BUILT_FLOOD = join(__dirname, '..', 'dist-tools', 'bench', 'anonymous-flood.js');

/** The anonymous client, in a process of its own (bench/anonymous-flood.ts): it does not share the service's event loop. */
class Flood {
  private readonly child: ChildProcess;
  private readonly tally: Promise<FloodTally>;

  constructor(baseUrl: string) {
    if (!existsSync(BUILT_FLOOD)) throw new Error(`${BUILT_FLOOD} is missing: run \`npm run build:tools\` (npm test does)`);
    this.child = fork(BUILT_FLOOD, [baseUrl], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.tally = new Promise((resolve, reject) => {
      this.child.once('message', (tally) => resolve(tally as FloodTally));
      this.child.once('exit', (code) => reject(new Error(`the flood exited (${code}) before it answered its tally`)));
    });
  }

  start(kind: string, loops: number, paths: string[], cursor?: string): void {
    const command: FloodCommand = { start: { kind, loops, paths, cursor } };
    this.child.send(command);
  }

  /** Ends every loop and answers what they were answered. */
  stop(): Promise<FloodTally> {
    if (this.child.exitCode === null) this.child.send({ stop: true } satisfies FloodCommand);
    return this.tally;
  }
}

describe('an anonymous client cannot starve the pool: webhooks keep being acknowledged under abusive reads', () => {
  let harness: SimulatorSpec;
  const counter = new StatementCounter();

  beforeAll(async () => {
    harness = await startSpec('anonymous_load', {
      env: {
        // The production pool, and reads open to anyone (API_TOKENS unset, the status public): the reviewer's setup.
        DATABASE_POOL_SIZE: '20',
        POZY_RATE_LIMIT_PER_MINUTE: '100000',
      },
      simulator: {
        deliver: false,
        before: (sim) => sim.world.seedWorld({ profiles: 3, accountsPerProfile: 2, posts: 40 }),
      },
    });
    const client = new Client({ connectionString: harness.db.url });
    await client.connect();
    try {
      // Posts whose content holds both words of the phrase searched below, in either order: a phrase query's worst case.
      await client.query(
        `INSERT INTO post (workspace_id, id, status, title, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                           synced_at, read_started_at, read_id, sequence)
         SELECT 'default', 'e' || lpad(to_hex(i), 23, '0'), 'published', 'Title ' || i,
                CASE WHEN i % 2 = 0 THEN 'coffee and tea number ' || i ELSE 'tea or coffee, take ' || i END,
                '[]'::jsonb, ARRAY[]::text[], ARRAY[]::text[], now() - interval '1 day', now() - interval '1 day', now(), now(),
                gen_random_uuid(), 1
           FROM generate_series(1, ${POSTS}) i`,
      );
      await client.query(
        `INSERT INTO pozy_event (workspace_id, id, type, payload, "timestamp", resource_type, resource_id, received_at)
         SELECT 'default', 'evt_' || i, 'post.published', jsonb_build_object('id', 'evt_' || i, 'event', 'post.published'),
                now() - i * interval '20 seconds', 'post', 'e' || lpad(to_hex(1 + i % ${POSTS}), 23, '0'), now() - i * interval '20 seconds'
           FROM generate_series(1, ${EVENTS}) i`,
      );
      await client.query('ANALYZE');
    } finally {
      await client.end();
    }
  }, 300_000);

  afterAll(async () => {
    counter.stop();
    await harness?.close();
  });

  /** Makes `n` changes in Pozy's world and delivers an event for each (the test's own: each acknowledgement is timed), a few at a time, timing each acknowledgement. */
  async function deliverChanges(n: number): Promise<Ack[]> {
    const acks: Ack[] = [];
    const posts = harness.sim.world.listPosts();
    for (let sent = 0; sent < n; sent += WEBHOOKS_AT_ONCE) {
      const events = Array.from({ length: WEBHOOKS_AT_ONCE }, (_, k) => {
        const post = posts[(sent + k) % posts.length];
        harness.sim.world.editPost(post._id, { content: `edited ${sent + k} ${Date.now()}` });
        return postEvent(post._id, 'post.scheduled');
      });
      acks.push(
        ...(await Promise.all(
          events.map(async (event) => {
            const started = performance.now();
            const answer = await deliver(harness.service.baseUrl, event);
            return { status: answer.status, ms: performance.now() - started, spooled: answer.body.spooled === true };
          }),
        )),
      );
      // About 50 webhooks a second: a busy workspace, not a benchmark.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return acks;
  }

  it('acknowledges every webhook with a 2xx, spools none, and answers every abusive request clearly', async () => {
    const base = harness.service.baseUrl;
    const quiet = await deliverChanges(WEBHOOKS);
    expect(quiet.filter((a) => a.status !== 200)).toEqual([]);
    await waitFor('the quiet phase to be reconciled', async () => ((await backlog(harness.service.pool)) === 0 ? true : undefined), 120_000);

    // What the service sends with nobody reading: its own loops (the sequencer, the dispatcher, the worker).
    const changesService = harness.service.app.get(ChangesService);
    counter.start();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const backgroundRate = counter.rate();

    const flood = new Flood(base);
    let tally: FloodTally | undefined;
    let idleRate: number;
    let loaded: Ack[];
    try {
      // 600 long polls at the head, two thirds filtered to what never comes, each following its answers' nextCursor.
      const head = ((await (await fetch(`${base}/changes/head`)).json()) as { cursor: string }).cursor;
      flood.start(
        'polls',
        LONG_POLLS,
        ['', '&types=account.removed', '&profileId=nobody'].map((filter) => `/changes?wait=30&after={cursor}${filter}`),
        head,
      );
      await waitFor('the long polls to wait', async () => (changesService.waiting >= LONG_POLLS * 0.9 ? true : undefined), 60_000);
      // The same window with 600 idle long polls: what they cost beyond that, whatever their number.
      counter.start();
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      idleRate = counter.rate();

      flood.start('status', STATUS_CLIENTS, ['/', '/sync/status', '/metrics']);
      flood.start('searches', SEARCH_CLIENTS, [`/posts?q=${encodeURIComponent('"coffee tea"')}&limit=1`]);
      loaded = await deliverChanges(WEBHOOKS);
    } finally {
      tally = await flood.stop();
    }

    process.stdout.write(
      `anonymous load: webhook acknowledgement quiet ${summary(quiet)}, under load ${summary(loaded)}; ` +
        `statements/s: ${backgroundRate.toFixed(0)} alone, ${idleRate.toFixed(0)} with ${LONG_POLLS} idle long polls; ` +
        `answers: ${JSON.stringify(tally.statuses)}\n`,
    );
    expect(loaded.filter((a) => a.status !== 200)).toEqual([]);
    expect(loaded.filter((a) => a.spooled)).toEqual([]);
    expect(quiet.filter((a) => a.spooled)).toEqual([]);
    // Every abusive request got a 2xx or a clear refusal (a 4xx, or a 503 naming itself): never a 500, never no answer.
    expect(tally.unclear.slice(0, 5)).toEqual([]);
    // The status is computed for every caller at once: the flood was answered, not refused.
    expect(tally.statuses.status?.['200'] ?? 0).toBeGreaterThan(0);
    // The long polls share one reader: 600 of them cost the database (almost) nothing while they wait.
    expect(idleRate - backgroundRate).toBeLessThan(20);

    // And nothing accepted under the load was lost: the mirror ends with every post as Pozy holds it.
    await waitFor('the mirror to catch up after the load', async () => ((await backlog(harness.service.pool)) === 0 ? true : undefined), 120_000);
    const truth = harness.sim.world.listPosts().map((post) => ({ id: post._id, content: post.content }));
    const mirrored = await Promise.all(
      truth.map(async ({ id }) => ({ id, content: ((await (await fetch(`${base}/posts/${id}`)).json()) as { content?: string }).content })),
    );
    expect(mirrored).toEqual(truth);
  }, 300_000);
});
