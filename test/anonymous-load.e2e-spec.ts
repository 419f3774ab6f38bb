import { Client } from 'pg';
import { ChangesService } from '../src/changes/changes.service';
import { createTestDatabase, TestDatabase } from './support/database';
import { backlog, Harness, startHarness } from './support/harness';
import { deliver, postEvent } from './support/pozy-events';
import { waitFor } from './support/service';
import { StatementCounter } from './support/statement-counter';

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

interface Abuse {
  /** Answers by status; a socket error counts as status 0. */
  statuses: Map<number, number>;
  /** Answers that were not 2xx and not a JSON error naming itself (`{ error }`). */
  unclear: string[];
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

const summary = (acks: Ack[]) =>
  `p50 ${percentile(
    acks.map((a) => a.ms),
    50,
  ).toFixed(0)} ms, p99 ${percentile(
    acks.map((a) => a.ms),
    99,
  ).toFixed(0)} ms`;

/** Anonymous requests in flight, each with its own signal: one signal shared by thousands of requests leaks listeners. */
class Requests {
  private readonly inFlight = new Set<AbortController>();
  stopped = false;

  /** One anonymous request; what it answered is tallied, and anything that is not a clear answer is kept to report. */
  async send(tally: Abuse, url: string): Promise<void> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    let status = 0;
    let text = '';
    try {
      const response = await fetch(url, { signal: controller.signal });
      status = response.status;
      text = await response.text();
    } catch (error) {
      if (controller.signal.aborted) return;
      text = (error as Error).message;
    } finally {
      this.inFlight.delete(controller);
    }
    tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1);
    if (status >= 200 && status < 300) return;
    let named = false;
    try {
      named = typeof (JSON.parse(text) as { error?: unknown }).error === 'string';
    } catch {
      named = false;
    }
    // A clear refusal is a 4xx or a 503 naming itself; any other 5xx, or no answer, is the service failing.
    if (status === 0 || (status >= 500 && status !== 503) || !named) tally.unclear.push(`${status} ${url}: ${text.slice(0, 200)}`);
  }

  /** Runs `clients` loops of `request` until `stop`. */
  flood(clients: number, request: (i: number) => Promise<void>): Promise<void[]> {
    return Promise.all(
      Array.from({ length: clients }, async (_, i) => {
        while (!this.stopped) await request(i);
      }),
    );
  }

  stop(): void {
    this.stopped = true;
    for (const controller of this.inFlight) controller.abort();
  }
}

describe('an anonymous client cannot starve the pool: webhooks keep being acknowledged under abusive reads', () => {
  let db: TestDatabase;
  let harness: Harness;
  const counter = new StatementCounter();

  beforeAll(async () => {
    db = await createTestDatabase('anonymous_load');
    harness = await startHarness(db.url, {
      deliver: false,
      env: {
        // The production pool, and reads open to anyone (API_TOKENS unset, the status public): the reviewer's setup.
        DATABASE_POOL_SIZE: '20',
        POZY_RATE_LIMIT_PER_MINUTE: '100000',
      },
      before: (sim) => sim.world.seedWorld({ profiles: 3, accountsPerProfile: 2, posts: 40 }),
    });
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      // Posts whose content holds both words of the phrase searched below, in either order: a phrase query's worst case.
      await client.query(
        `INSERT INTO post (id, status, title, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                           synced_at, read_started_at, read_id, sequence)
         SELECT 'e' || lpad(to_hex(i), 23, '0'), 'published', 'Title ' || i,
                CASE WHEN i % 2 = 0 THEN 'coffee and tea number ' || i ELSE 'tea or coffee, take ' || i END,
                '[]'::jsonb, ARRAY[]::text[], ARRAY[]::text[], now() - interval '1 day', now() - interval '1 day', now(), now(),
                gen_random_uuid(), 1
           FROM generate_series(1, ${POSTS}) i`,
      );
      await client.query(
        `INSERT INTO pozy_event (id, type, payload, "timestamp", resource_type, resource_id, received_at)
         SELECT 'evt_' || i, 'post.published', jsonb_build_object('id', 'evt_' || i, 'event', 'post.published'),
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
    await db?.drop();
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

    const head = ((await (await fetch(`${base}/changes/head`)).json()) as { cursor: string }).cursor;
    const requests = new Requests();
    const polls: Abuse = { statuses: new Map(), unclear: [] };
    const status: Abuse = { statuses: new Map(), unclear: [] };
    const searches: Abuse = { statuses: new Map(), unclear: [] };

    await waitFor('the quiet phase to be reconciled', async () => ((await backlog(harness.service.pool)) === 0 ? true : undefined), 120_000);
    // What the service sends with nobody reading: its own loops (the sequencer, the dispatcher, the worker).
    const changesService = harness.service.app.get(ChangesService);
    counter.start();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const backgroundRate = counter.rate();

    // 600 long polls at the head, two thirds filtered to what never comes: each is answered after its wait, and asks again.
    const pollPaths = [
      `/changes?wait=30&after=${head}`,
      `/changes?wait=30&after=${head}&types=account.removed`,
      `/changes?wait=30&after=${head}&profileId=nobody`,
    ];
    const floods = [requests.flood(LONG_POLLS, (i) => requests.send(polls, `${base}${pollPaths[i % pollPaths.length]}`))];
    let idleRate: number;
    let loaded: Ack[];
    try {
      await waitFor('the long polls to wait', async () => (changesService.waiting >= LONG_POLLS * 0.9 ? true : undefined), 60_000);
      // The same window with 600 idle long polls: what they cost beyond that, whatever their number.
      counter.start();
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      idleRate = counter.rate();

      const statusPaths = ['/', '/sync/status', '/metrics'];
      const phrase = `${base}/posts?q=${encodeURIComponent('"coffee tea"')}&limit=1`;
      floods.push(requests.flood(STATUS_CLIENTS, (i) => requests.send(status, `${base}${statusPaths[i % statusPaths.length]}`)));
      floods.push(requests.flood(SEARCH_CLIENTS, () => requests.send(searches, phrase)));
      loaded = await deliverChanges(WEBHOOKS);
    } finally {
      requests.stop();
      await Promise.all(floods);
    }

    process.stdout.write(
      `anonymous load: webhook acknowledgement quiet ${summary(quiet)}, under load ${summary(loaded)}; ` +
        `statements/s: ${backgroundRate.toFixed(0)} alone, ${idleRate.toFixed(0)} with ${LONG_POLLS} idle long polls; ` +
        `answers: status ${JSON.stringify([...status.statuses])}, searches ${JSON.stringify([...searches.statuses])}, polls ${JSON.stringify([...polls.statuses])}\n`,
    );
    expect(loaded.filter((a) => a.status !== 200)).toEqual([]);
    expect(loaded.filter((a) => a.spooled)).toEqual([]);
    expect(quiet.filter((a) => a.spooled)).toEqual([]);
    expect({ status: status.unclear.slice(0, 5), searches: searches.unclear.slice(0, 5), polls: polls.unclear.slice(0, 5) }).toEqual({
      status: [],
      searches: [],
      polls: [],
    });
    // Each status figure is computed for every caller at once, and the long polls share one reader.
    expect(status.statuses.get(200) ?? 0).toBeGreaterThan(0);
    expect(idleRate - backgroundRate).toBeLessThan(20);
  }, 300_000);
});
