import { createHash } from 'node:crypto';
import { Controller, Get, Module, Query } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Pool } from 'pg';
import { AllExceptionsFilter } from '../src/common/all-exceptions.filter';
import { ReadAccess, ReadScope } from '../src/common/read-access';
import { AppConfig } from '../src/config/app-config';
import { ConfigModule } from '../src/config/config.module';
import { DatabaseModule } from '../src/database/database.module';
import { ReadTokensModule } from '../src/read-tokens/read-tokens.module';
import { createTestDatabase, TestDatabase } from './support/database';
import { request } from './support/http';
import { RunningService, startService, waitFor } from './support/service';

const ADMIN_TOKEN = 'admin_read_tokens_e2e_7d3f';
const STATIC_TOKEN = 'static_read_token_e2e_9a1c';
const TOKEN_FORM = /^pzs_[A-Za-z0-9_-]{43}$/;
/** How soon another replica must honour a token made, or refuse one deleted, on this one. */
const REPLICA_DEADLINE_MS = 5_000;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

type Json = Record<string, unknown>;
interface Answer {
  status: number;
  body: Json;
  text: string;
}

async function call(
  base: string,
  method: string,
  path: string,
  options: { token?: string; json?: unknown; body?: Buffer | string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const { token, json, body, headers } = options;
  // A raw body is sent as JSON too: the tests send broken JSON that way.
  const raw: Record<string, string> = body !== undefined ? { 'content-type': 'application/json' } : {};
  return request(base, path, { method, token, json, body, headers: { ...raw, ...headers } });
}

/**
 * A replica of the smallest kind: the real token registry and read guard on the same database, and one handler
 * answering the @ReadScope() it was given. Nothing in the service consumes the scope yet (the data tables have no
 * workspace yet); this shows what a handler will receive.
 */
@Controller('scope-echo')
@ReadAccess()
class ScopeEchoController {
  @Get()
  echo(@ReadScope() scope: ReadScope, @Query('workspace') workspace?: string): { scope: ReadScope; narrowed: string[] | '*' } {
    return { scope, narrowed: scope.narrow(workspace === undefined ? undefined : workspace.split(',')) };
  }
}

async function startScopeEcho(databaseUrl: string): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const config = AppConfig.fromEnvironment({ DATABASE_URL: databaseUrl, POZY_API_KEY: 'sk_test', API_TOKENS: STATIC_TOKEN, LOG_LEVEL: 'error' });
  @Module({ imports: [ConfigModule.forRoot(config), DatabaseModule, ReadTokensModule], controllers: [ScopeEchoController] })
  class ScopeEchoModule {}
  const app = await NestFactory.create<NestFastifyApplication>(ScopeEchoModule, new FastifyAdapter(), { logger: ['error'] });
  app.useGlobalFilters(new AllExceptionsFilter());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address();
  if (typeof address !== 'object' || !address) throw new Error('scope echo is not listening');
  return { baseUrl: `http://127.0.0.1:${address.port}`, close: () => app.close() };
}

describe('read tokens made through the admin API (/admin/tokens), scoped to workspaces', () => {
  let db: TestDatabase;
  let direct: Pool;
  /** API_TOKENS set: its reads are never open. */
  let service: RunningService;
  /** Another replica on the same database, API_TOKENS unset: open until a made token is live. */
  let other: RunningService;
  let echo: { baseUrl: string; close(): Promise<void> };
  const admin = (method: string, path: string, options: Parameters<typeof call>[3] = {}) =>
    call(service.baseUrl, method, path, { token: ADMIN_TOKEN, ...options });
  const create = async (name: string, workspaces: string[] | '*') => {
    const answer = await admin('POST', '/admin/tokens', { json: { name, workspaces } });
    expect(answer.status).toBe(201);
    return answer.body as { id: string; name: string; workspaces: string[] | '*'; createdAt: string; token: string };
  };
  const stored = async () => (await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM read_token')).rows[0].n;
  const readStatus = async (base: string, token?: string) => (await call(base, 'GET', '/posts', { token })).status;

  beforeAll(async () => {
    db = await createTestDatabase('admin_read_tokens');
    direct = db.pool(2);
    service = await startService(db.url, { ROLE: 'api', ADMIN_TOKEN, API_TOKENS: STATIC_TOKEN });
    other = await startService(db.url, { ROLE: 'api', ADMIN_TOKEN });
    echo = await startScopeEcho(db.url);
  });

  afterAll(async () => {
    await echo?.close();
    await other?.close();
    await service?.close();
    await direct?.end();
    await db?.drop();
  });

  describe('made, read with, listed, deleted', () => {
    let scoped: Awaited<ReturnType<typeof create>>;
    let every: Awaited<ReturnType<typeof create>>;

    it('keeps the other replica open while no made token is live', async () => {
      expect(await readStatus(other.baseUrl)).toBe(200);
    });

    it('answers 201 with the token once, and stores only its SHA-256', async () => {
      const before = Date.now();
      scoped = await create('CRM sync (EU)', ['acme-eu', 'acme-us']);

      expect(Object.keys(scoped).sort()).toEqual(['createdAt', 'id', 'name', 'token', 'workspaces']);
      expect(scoped).toMatchObject({ name: 'CRM sync (EU)', workspaces: ['acme-eu', 'acme-us'] });
      expect(scoped.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(scoped.token).toMatch(TOKEN_FORM);
      expect(new Date(scoped.createdAt).getTime()).toBeGreaterThanOrEqual(before - 1_000);
      const { rows } = await direct.query<Json>('SELECT * FROM read_token WHERE id = $1', [scoped.id]);
      expect(rows).toEqual([
        expect.objectContaining({ token_hash: sha256(scoped.token), all_workspaces: false, workspaces: ['acme-eu', 'acme-us'] }),
      ]);
      expect(JSON.stringify(rows)).not.toContain(scoped.token.slice(4));

      every = await create('warehouse', '*');
      expect(every.workspaces).toBe('*');
      expect(every.token).not.toBe(scoped.token);
    });

    it('reads with it on this replica at once: the query endpoints, and the status without ids for a scoped token', async () => {
      for (const path of ['/posts', '/accounts', '/changes/head']) {
        expect({ path, status: (await call(service.baseUrl, 'GET', path, { token: scoped.token })).status }).toEqual({ path, status: 200 });
      }
      expect((await call(service.baseUrl, 'GET', '/sync/status', { token: scoped.token })).body.redacted).toBe(true);
      expect((await call(service.baseUrl, 'GET', '/sync/status', { token: every.token })).body.redacted).toBe(false);
      expect((await call(service.baseUrl, 'GET', '/sync/status', { token: STATIC_TOKEN })).body.redacted).toBe(false);
    });

    it('is honoured by the other replica within the deadline, which closes its reads to anonymous requests', async () => {
      // While its reads are open any token passes there: what shows it has seen the token is that anonymous reads stop.
      await waitFor(
        'the other replica to see a live token',
        async () => ((await readStatus(other.baseUrl)) === 401 ? true : undefined),
        REPLICA_DEADLINE_MS,
      );
      expect(await readStatus(other.baseUrl, scoped.token)).toBe(200);
      expect(await call(other.baseUrl, 'GET', '/posts')).toMatchObject({
        status: 401,
        body: {
          error: 'missing_token',
          message: 'Authorization: Bearer <token> is required: a live token made with POST /admin/tokens, or ADMIN_TOKEN',
        },
      });
      expect(await call(other.baseUrl, 'GET', '/posts', { token: 'pzs_not_a_token' })).toMatchObject({
        status: 403,
        body: { error: 'invalid_token' },
      });
      expect(await readStatus(other.baseUrl, ADMIN_TOKEN)).toBe(200);
    });

    it("hands the token's scope to the handler, and narrows a requested list to it", async () => {
      const echoOf = async (token: string, query = '') => {
        const answer = await call(echo.baseUrl, 'GET', `/scope-echo${query}`, { token });
        return answer.status === 200 ? answer.body : undefined;
      };
      expect(await waitFor('the echo replica to honour the token', () => echoOf(scoped.token), REPLICA_DEADLINE_MS)).toEqual({
        scope: { workspaces: ['acme-eu', 'acme-us'] },
        narrowed: ['acme-eu', 'acme-us'],
      });
      expect(await echoOf(scoped.token, '?workspace=acme-us,beta')).toEqual({ scope: { workspaces: ['acme-eu', 'acme-us'] }, narrowed: ['acme-us'] });
      expect(await echoOf(scoped.token, '?workspace=beta')).toEqual({ scope: { workspaces: ['acme-eu', 'acme-us'] }, narrowed: [] });
      expect(await echoOf(every.token, '?workspace=beta')).toEqual({ scope: { workspaces: '*' }, narrowed: ['beta'] });
      expect(await echoOf(every.token)).toEqual({ scope: { workspaces: '*' }, narrowed: '*' });
      expect(await echoOf(STATIC_TOKEN)).toEqual({ scope: { workspaces: '*' }, narrowed: '*' });
    });

    it('lists the live tokens newest first, a page at a time, never with the token or its hash', async () => {
      const more = [await create('a', ['alpha']), await create('b', ['beta']), await create('c', ['gamma'])];
      const seen: Json[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const answer: Answer = await admin('GET', `/admin/tokens?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(answer.status).toBe(200);
        for (const token of [scoped, every, ...more]) {
          expect(answer.text).not.toContain(token.token);
          expect(answer.text).not.toContain(sha256(token.token));
        }
        const page = answer.body as { data: Json[]; nextCursor: string | null };
        expect(page.data.length).toBeLessThanOrEqual(2);
        seen.push(...page.data);
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor !== null);

      expect(pages).toBe(3);
      // Newest first; two made within one millisecond by id, both descending.
      const newestFirst = [scoped, every, ...more].sort((x, y) => y.createdAt.localeCompare(x.createdAt) || y.id.localeCompare(x.id));
      expect(
        newestFirst
          .slice(0, 3)
          .map((t) => t.name)
          .sort(),
      ).toEqual(['a', 'b', 'c']);
      expect(seen.map((t) => t.id)).toEqual(newestFirst.map((t) => t.id));
      for (const token of seen) expect(Object.keys(token).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'workspaces']);
      expect(seen.at(-1)).toMatchObject({ name: 'CRM sync (EU)', workspaces: ['acme-eu', 'acme-us'] });
      for (const token of more) expect((await admin('DELETE', `/admin/tokens/${token.id}`)).status).toBe(200);
    });

    it("records a token's last use, in the background, at most once a minute", async () => {
      const lastUsed = async () =>
        (await direct.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM read_token WHERE id = $1', [scoped.id])).rows[0].last_used_at ??
        undefined;
      const first = await waitFor('the use to be recorded', lastUsed, REPLICA_DEADLINE_MS);
      const listed = (await admin('GET', '/admin/tokens')).body as { data: Array<{ id: string; lastUsedAt: string | null }> };
      expect(listed.data.find((t) => t.id === scoped.id)?.lastUsedAt).toBe(first.toISOString());

      for (let i = 0; i < 20; i++) expect(await readStatus(service.baseUrl, scoped.token)).toBe(200);
      // Two of every replica's one-second polls: a use it would write, it would have written by then.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(await lastUsed()).toEqual(first);
    });

    it('refuses a deleted token at once on this replica, and on the others within the deadline, as it refuses a wrong one', async () => {
      const deleted = await admin('DELETE', `/admin/tokens/${scoped.id.toUpperCase()}`);
      expect(deleted).toMatchObject({ status: 200, body: { id: scoped.id, deleted: true, readsOpen: false } });

      const refused = {
        statusCode: 403,
        error: 'invalid_token',
        message: 'The token is not one of API_TOKENS, nor a live token made with POST /admin/tokens, nor ADMIN_TOKEN',
      };
      expect(await call(service.baseUrl, 'GET', '/posts', { token: scoped.token })).toMatchObject({ status: 403, body: refused });
      expect((await call(service.baseUrl, 'GET', '/posts', { token: 'pzs_never_made' })).body).toEqual(refused);
      expect((await call(service.baseUrl, 'GET', '/sync/status', { token: scoped.token })).status).toBe(403);

      const started = Date.now();
      await waitFor(
        'the other replica to refuse the deleted token',
        async () => ((await readStatus(other.baseUrl, scoped.token)) === 403 ? true : undefined),
        REPLICA_DEADLINE_MS,
      );
      // Both within the one deadline, counted from the deletion.
      await waitFor(
        'the echo replica to refuse it',
        async () => ((await call(echo.baseUrl, 'GET', '/scope-echo', { token: scoped.token })).status === 403 ? true : undefined),
        Math.max(0, REPLICA_DEADLINE_MS - (Date.now() - started)),
      );
      // The token for every workspace still reads there, and anonymous requests are still refused.
      expect(await readStatus(other.baseUrl, every.token)).toBe(200);
      expect(await readStatus(other.baseUrl)).toBe(401);

      const listed = (await admin('GET', '/admin/tokens')).body as { data: Array<{ id: string }> };
      expect(listed.data.map((t) => t.id)).toEqual([every.id]);
      expect((await direct.query('SELECT deleted_at FROM read_token WHERE id = $1 AND deleted_at IS NOT NULL', [scoped.id])).rowCount).toBe(1);
      expect(await admin('DELETE', `/admin/tokens/${scoped.id}`)).toMatchObject({ status: 404, body: { error: 'not_found' } });
    });

    it('opens the reads of a replica without API_TOKENS again when the last made token goes, and says so', async () => {
      const deleted = await call(other.baseUrl, 'DELETE', `/admin/tokens/${every.id}`, { token: ADMIN_TOKEN });
      expect(deleted).toMatchObject({ status: 200, body: { deleted: true, readsOpen: true } });
      expect(await readStatus(other.baseUrl)).toBe(200);
      // API_TOKENS set here: never open, and the deleted token is refused.
      await waitFor(
        'this replica to refuse it',
        async () => ((await readStatus(service.baseUrl, every.token)) === 403 ? true : undefined),
        REPLICA_DEADLINE_MS,
      );
      expect(await readStatus(service.baseUrl)).toBe(401);
    });
  });

  describe('refusals: a 4xx with a JSON body naming the problem, and nothing stored', () => {
    let live: Awaited<ReturnType<typeof create>>;

    beforeAll(async () => {
      live = await create('kept', ['acme-eu']);
    });

    const expectRefused = (answer: Answer, status: number, error: string, field?: string) => {
      expect({ status: answer.status, error: answer.body.error }).toEqual({ status, error });
      expect(answer.body).toMatchObject({ statusCode: status, message: expect.any(String) });
      if (field !== undefined) expect(answer.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    };

    const GOOD = { name: 'ok', workspaces: ['acme-eu'] };
    it.each<[string, Parameters<typeof call>[3], number, string, string | undefined, RegExp?]>([
      ['an unknown field', { json: { ...GOOD, admin: true } }, 400, 'invalid_request', 'admin', /admin should not exist/],
      [
        'a workspace id that is not a slug',
        { json: { ...GOOD, workspaces: ['acme-eu', 'Acme EU'] } },
        400,
        'invalid_request',
        'workspaces',
        /workspaces\[1\] must be a workspace id/,
      ],
      ['a workspace id too long', { json: { ...GOOD, workspaces: ['a'.repeat(64)] } }, 400, 'invalid_request', 'workspaces', /workspaces\[0\]/],
      ['"*" inside a list', { json: { ...GOOD, workspaces: ['*'] } }, 400, 'invalid_request', 'workspaces', /give "\*" alone/],
      ['a workspace repeated', { json: { ...GOOD, workspaces: ['a', 'a'] } }, 400, 'invalid_request', 'workspaces', /workspaces\[1\] repeats "a"/],
      ['an empty list', { json: { ...GOOD, workspaces: [] } }, 400, 'invalid_request', 'workspaces', /must not be empty/],
      [
        'over 100 workspaces',
        { json: { ...GOOD, workspaces: Array.from({ length: 101 }, (_, i) => `w${i}`) } },
        400,
        'invalid_request',
        'workspaces',
        /at most 100/,
      ],
      [
        'workspaces neither "*" nor a list',
        { json: { ...GOOD, workspaces: 'all' } },
        400,
        'invalid_request',
        'workspaces',
        /"\*" \(every workspace\) or a list/,
      ],
      ['no workspaces', { json: { name: 'ok' } }, 400, 'invalid_request', 'workspaces', undefined],
      ['a name too long', { json: { ...GOOD, name: 'n'.repeat(101) } }, 400, 'invalid_request', 'name', /100 characters/],
      ['a blank name', { json: { ...GOOD, name: '  ' } }, 400, 'invalid_request', 'name', /other than white space/],
      ['a name that is not text', { json: { ...GOOD, name: 7 } }, 400, 'invalid_request', 'name', /name must be a string/],
      ['a name PostgreSQL cannot store', { json: { ...GOOD, name: 'a\u0000b' } }, 400, 'invalid_request', 'name', undefined],
      ['a body that is not JSON', { body: '{"name": "ok", "workspaces": ' }, 400, 'malformed_json', undefined, /not valid JSON/],
      [
        'a body that is not UTF-8',
        { body: Buffer.from([0x7b, 0x22, 0x6e, 0xe9, 0x22, 0x3a, 0x31, 0x7d]) },
        400,
        'invalid_encoding',
        'body',
        undefined,
      ],
      ['a body over 1 MiB', { json: { ...GOOD, name: 'x'.repeat(1024 * 1024) } }, 413, 'payload_too_large', undefined, undefined],
      [
        'a body that is not application/json',
        { body: 'name=ok', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
        415,
        'unsupported_media_type',
        undefined,
        undefined,
      ],
      ['no body', {}, 400, 'invalid_request', 'name', undefined],
      ['no Authorization', { token: undefined, json: GOOD }, 401, 'missing_token', undefined, /ADMIN_TOKEN/],
      ['a wrong admin token', { token: 'admin_read_tokens_e2e_7d3X', json: GOOD }, 403, 'invalid_token', undefined, /admin token is not valid/],
      ['a read token of API_TOKENS', { token: STATIC_TOKEN, json: GOOD }, 403, 'invalid_token', undefined, /admin token is not valid/],
    ])('POST /admin/tokens with %s', async (_name, options, status, error, field, message) => {
      const before = await stored();
      const answer = await admin('POST', '/admin/tokens', options);
      expectRefused(answer, status, error, field);
      if (message) expect(answer.body.message).toMatch(message);
      expect(await stored()).toBe(before);
    });

    it('POST /admin/tokens with a token made through the API: 403, it cannot make another', async () => {
      const before = await stored();
      expectRefused(await admin('POST', '/admin/tokens', { token: live.token, json: GOOD }), 403, 'invalid_token');
      expect(await stored()).toBe(before);
    });

    it.each<[string, string, string | undefined, number, string, string | undefined]>([
      ['no Authorization', '/admin/tokens', undefined, 401, 'missing_token', undefined],
      ['a wrong admin token', '/admin/tokens', 'wrong_admin_token_xx', 403, 'invalid_token', undefined],
      ['a read token of API_TOKENS', '/admin/tokens', STATIC_TOKEN, 403, 'invalid_token', undefined],
      ['an unknown parameter', '/admin/tokens?workspace=acme-eu', ADMIN_TOKEN, 400, 'invalid_request', 'workspace'],
      ['a limit past 500', '/admin/tokens?limit=501', ADMIN_TOKEN, 400, 'invalid_request', 'limit'],
      ['a cursor this service never wrote', '/admin/tokens?cursor=eyJjIjoxfQ', ADMIN_TOKEN, 400, 'invalid_request', 'cursor'],
      ['a cursor PostgreSQL cannot store', '/admin/tokens?cursor=a%00b', ADMIN_TOKEN, 400, 'invalid_request', 'cursor'],
    ])('GET %s with %s', async (_name, path, token, status, error, field) => {
      const answer = await call(service.baseUrl, 'GET', path, { token });
      expectRefused(answer, status, error, field);
      expect(answer.text).not.toContain(live.id);
    });

    it('GET /admin/tokens with a token made through the API: 403, it cannot list', async () => {
      const answer = await call(service.baseUrl, 'GET', '/admin/tokens', { token: live.token });
      expectRefused(answer, 403, 'invalid_token');
      expect(answer.text).not.toContain(live.id);
    });

    it.each<[string, string | undefined, string | undefined, number, string, string | undefined]>([
      ['no Authorization', undefined, undefined, 401, 'missing_token', undefined],
      ['a wrong admin token', 'wrong_admin_token_xx', undefined, 403, 'invalid_token', undefined],
      ['a read token of API_TOKENS', STATIC_TOKEN, undefined, 403, 'invalid_token', undefined],
      ['an id that is not a UUID', ADMIN_TOKEN, 'not-a-uuid', 400, 'invalid_request', 'id'],
      ['the token itself in place of its id', ADMIN_TOKEN, 'TOKEN', 400, 'invalid_request', 'id'],
      ['an id no token has', ADMIN_TOKEN, '3b2c6a1e-8d4f-4e5a-9b7c-2d1e0f9a8b7c', 404, 'not_found', undefined],
    ])('DELETE /admin/tokens/:id with %s', async (_name, token, id, status, error, field) => {
      const target = id === undefined ? live.id : id === 'TOKEN' ? live.token : id;
      expectRefused(await call(service.baseUrl, 'DELETE', `/admin/tokens/${target}`, { token }), status, error, field);
      expect(await readStatus(service.baseUrl, live.token)).toBe(200);
    });

    it('DELETE /admin/tokens/:id with the token made through the API itself: 403, a token cannot delete itself', async () => {
      expectRefused(await call(service.baseUrl, 'DELETE', `/admin/tokens/${live.id}`, { token: live.token }), 403, 'invalid_token');
      expect(await readStatus(service.baseUrl, live.token)).toBe(200);
      expect((await direct.query('SELECT 1 FROM read_token WHERE id = $1 AND deleted_at IS NULL', [live.id])).rowCount).toBe(1);
    });

    it('answers 403 admin_disabled on all three endpoints of a replica without ADMIN_TOKEN, storing nothing', async () => {
      const closed = await startService(db.url, { ROLE: 'api', API_TOKENS: STATIC_TOKEN });
      try {
        const before = await stored();
        for (const [method, path, json] of [
          ['POST', '/admin/tokens', GOOD],
          ['GET', '/admin/tokens', undefined],
          ['DELETE', `/admin/tokens/${live.id}`, undefined],
        ] as const) {
          for (const token of [undefined, ADMIN_TOKEN, STATIC_TOKEN]) {
            expectRefused(await call(closed.baseUrl, method, path, { token, json }), 403, 'admin_disabled');
          }
        }
        expect(await stored()).toBe(before);
        expect(await readStatus(closed.baseUrl, live.token)).toBe(200);
      } finally {
        await closed.close();
      }
    });
  });
});
