import { Client } from 'pg';
import { postsSharingTwoWords, whileTableLocked, withIndexesDeferred } from './support/bulk-load';
import { createTestDatabase, TestDatabase } from './support/database';
import { getJson } from './support/http';
import { deliver, postEvent } from './support/pozy-events';
import { RunningService, startService } from './support/service';

const POSTS = 5_000;
const STATEMENT_TIMEOUT_MS = 300;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfter: string | null;
}

async function get(service: RunningService, path: string): Promise<Answer> {
  const { status, body, headers } = await getJson(service, path);
  return { status, body, retryAfter: headers.get('retry-after') };
}

const PHRASE = `/posts?q=${encodeURIComponent('"coffee tea"')}&limit=1`;

describe('the query endpoints: bounded time, bounded searches, a bounded share of the connections', () => {
  let db: TestDatabase;
  let service: RunningService;

  beforeAll(async () => {
    db = await createTestDatabase('query_limits');
    await (await startService(db.url, { ROLE: 'api' })).close();
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, ['post'], () => client.query(postsSharingTwoWords(POSTS)).then(() => undefined));
      await client.query('ANALYZE post');
    } finally {
      await client.end();
    }
    service = await startService(db.url, {
      // The receiver alone: what it needs from the pool is what the reads must never take.
      ROLE: 'api',
      QUERY_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      DATABASE_QUERY_POOL_SIZE: '4',
    });
  }, 300_000);

  afterAll(async () => {
    await service?.close();
    await db?.drop();
  });

  // A read outlasts its timeout here because a migration's lock holds the post table (whileTableLocked), on any machine.
  it('cuts a read at QUERY_STATEMENT_TIMEOUT_MS: 503 query_timeout with Retry-After; once the table is free, reads answer', async () => {
    const phrase = await whileTableLocked(db.url, 'post', () => get(service, PHRASE));
    expect(phrase).toMatchObject({
      status: 503,
      body: { statusCode: 503, error: 'query_timeout', message: expect.stringContaining('QUERY_STATEMENT_TIMEOUT_MS') },
      retryAfter: expect.stringMatching(/^\d+$/),
    });
    const plain = await get(service, `/posts?q=coffee&limit=1`);
    expect(plain.status).toBe(200);
    expect(plain.body.data).toHaveLength(1);
    const one = await get(service, `/posts/${'1'.padStart(24, '0')}`);
    expect(one).toMatchObject({ status: 200, body: { id: '1'.padStart(24, '0') } });
  });

  it.each([
    ['201 characters', 'a'.repeat(201)],
    ['11 words', 'one two three four five six seven eight nine ten eleven'],
    ['3 phrases', '"a b" "c d" "e f"'],
    ['4 or', 'a or b or c or d or e'],
    ['4 negated words', 'a -b -c -d -e'],
    ['only negated words', '-coffee'],
    ['a negated phrase alone', '-"coffee tea"'],
    ['an alternative of only negated words', 'coffee or -tea'],
  ])('refuses a search of %s with 400 naming q, before reading anything', async (_shape, q) => {
    const answer = await get(service, `/posts?q=${encodeURIComponent(q)}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ statusCode: 400, error: 'invalid_request' });
    expect((answer.body.details as Array<{ field: string }>).map((detail) => detail.field)).toEqual(['q']);
  });

  it.each([
    ['two words', 'coffee milk'],
    ['a phrase and a negated word', '"post 7" -lemon'],
    ['an alternative', 'lemon or sugar'],
    ['ten words', 'coffee first then a walk by the river then tea'],
  ])('answers a search of %s', async (_shape, q) => {
    const answer = await get(service, `/posts?q=${encodeURIComponent(q)}&limit=5`);
    expect(answer.status).toBe(200);
    expect((answer.body.data as unknown[]).length).toBeGreaterThan(0);
  });

  it('60 concurrent slow reads take none of the connections webhooks need: every delivery is stored, none spooled, no read answers 500', async () => {
    const before = Number((await service.pool.query<{ n: string }>('SELECT count(*) AS n FROM pozy_event')).rows[0].n);
    const deliveries: Array<{ status: number; body: Record<string, unknown> }> = [];
    const answers = await whileTableLocked(db.url, 'post', async () => {
      const reads = Array.from({ length: 60 }, () => get(service, PHRASE));
      // While the reads wait, webhooks arrive one after another, as Pozy sends them.
      for (let i = 0; i < 40; i += 1) {
        deliveries.push(await deliver(service.baseUrl, postEvent(`${i.toString(16).padStart(4, '0')}aa01f3c2b1e4d5f6a7b8`)));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return Promise.all(reads);
    });

    expect(deliveries.filter((delivery) => delivery.status !== 200 || delivery.body.spooled !== undefined)).toEqual([]);
    const stored = Number((await service.pool.query<{ n: string }>('SELECT count(*) AS n FROM pozy_event')).rows[0].n);
    expect(stored - before).toBe(40);
    // Each read was cut at its timeout, or found every query connection busy and was told so: a clear 503, never a 500.
    const outcomes = answers.map(
      (answer) => `${answer.status} ${String(answer.body.error)} ${answer.retryAfter === null ? 'no' : 'with'} Retry-After`,
    );
    expect(outcomes.filter((outcome) => !/^503 (query_timeout|overloaded) with Retry-After$/.test(outcome))).toEqual([]);
  }, 120_000);
});
