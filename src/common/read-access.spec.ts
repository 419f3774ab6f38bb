import { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import type { FastifyRequest } from 'fastify';
import { AppConfig } from '../config/app-config';
import { ApiError } from './api-error';
import {
  ConsumerRoute,
  IssuedReadTokens,
  IssuedToken,
  ReadConsumers,
  ReadDetail,
  ReadScope,
  ReadTokenGuard,
  StatusAccessGuard,
  StatusDetail,
} from './read-access';
import { WorkspaceScope } from './read-scope';

const ADMIN = 'admin_token_for_the_spec';
const STATIC = 'static_read_token_abc';
const MADE_SCOPED = 'pzs_made_for_two_workspaces';
const MADE_ALL = 'pzs_made_for_every_workspace';
const DELETED = 'pzs_made_then_deleted';

/** The registry as the guards see it: the two made tokens live, or none; stale when asked. */
class FakeIssued extends IssuedReadTokens {
  live = new Map<string, IssuedToken>([
    [MADE_SCOPED, { id: 't1', scope: WorkspaceScope.of(['acme-eu', 'acme-us']) }],
    [MADE_ALL, { id: 't2', scope: WorkspaceScope.ALL }],
  ]);
  stale = false;
  asked = 0;

  get anyLive(): boolean {
    return this.live.size > 0;
  }

  match(presented: string): IssuedToken | undefined {
    this.asked += 1;
    if (this.stale) throw new ApiError('tokens_unavailable', 'stale');
    return this.live.get(presented);
  }
}

const config = (env: Record<string, string> = {}) =>
  AppConfig.fromEnvironment({ POZY_API_KEY: 'sk_test', DATABASE_URL: 'postgresql://localhost/x', ADMIN_TOKEN: ADMIN, ...env });

const requestWith = (token?: string) => ({ headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }) as unknown as FastifyRequest;

const contextOf = (request: FastifyRequest) => ({ switchToHttp: () => ({ getRequest: () => request }) }) as unknown as ExecutionContext;

/** What a param decorator's factory answers for a request (Nest records the factory where a handler's arguments are described). */
function paramOf<T>(decorator: () => ParameterDecorator, request: FastifyRequest): T {
  class Probe {
    handler(@decorator() _value: unknown): void {}
  }
  const args = Reflect.getMetadata(ROUTE_ARGS_METADATA, Probe, 'handler') as Record<
    string,
    { factory: (data: unknown, context: ExecutionContext) => T }
  >;
  return Object.values(args)[0].factory(undefined, contextOf(request));
}

function thrown(run: () => unknown): { status: number; code: string; message: string } | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, code: error.code, message: error.message };
    throw error;
  }
  return undefined;
}

describe('ReadTokenGuard and StatusAccessGuard: the reader and its scope', () => {
  let issued: FakeIssued;

  beforeEach(() => {
    issued = new FakeIssued();
  });

  /** The guard's verdict for a token, and what the handler's @ReadScope() and @StatusDetail() then read. */
  function read(guard: ReadTokenGuard | StatusAccessGuard, token?: string) {
    const request = requestWith(token);
    const refused = thrown(() => guard.canActivate(contextOf(request)));
    if (refused) return { refused };
    return { scope: paramOf<ReadScope>(ReadScope, request).workspaces, detail: paramOf<ReadDetail>(StatusDetail, request) };
  }

  describe('API_TOKENS set, made tokens live', () => {
    const guard = () => new ReadTokenGuard(config({ API_TOKENS: STATIC }), issued, new Reflector());

    it.each<[string, string | undefined, unknown]>([
      ['a token of API_TOKENS: every workspace', STATIC, { scope: '*', detail: 'full' }],
      ['ADMIN_TOKEN: every workspace', ADMIN, { scope: '*', detail: 'full' }],
      ['a token made for two workspaces: those two', MADE_SCOPED, { scope: ['acme-eu', 'acme-us'], detail: 'public' }],
      ['a token made for every workspace: every one', MADE_ALL, { scope: '*', detail: 'full' }],
    ])('%s', (_name, token, expected) => {
      expect(read(guard(), token)).toEqual(expected);
    });

    it('refuses a wrong token and a deleted one alike: 403 invalid_token, naming what is accepted', () => {
      issued.live.set(DELETED, { id: 't3', scope: WorkspaceScope.of(['acme-eu']) });
      expect(read(guard(), DELETED)).toMatchObject({ scope: ['acme-eu'] });
      issued.live.delete(DELETED);

      const refusal = {
        refused: {
          status: 403,
          code: 'invalid_token',
          message: 'The token is not one of API_TOKENS, nor a live token made with POST /admin/tokens, nor ADMIN_TOKEN',
        },
      };
      expect(read(guard(), DELETED)).toEqual(refusal);
      expect(read(guard(), 'pzs_never_made')).toEqual(refusal);
    });

    it('refuses a request without a token: 401 missing_token', () => {
      expect(read(guard())).toEqual({
        refused: {
          status: 401,
          code: 'missing_token',
          message: 'Authorization: Bearer <token> is required: one of API_TOKENS, a live token made with POST /admin/tokens, or ADMIN_TOKEN',
        },
      });
    });

    it('asks the registry only for a token not in the environment', () => {
      read(guard(), STATIC);
      read(guard(), ADMIN);
      expect(issued.asked).toBe(0);
      read(guard(), MADE_SCOPED);
      expect(issued.asked).toBe(1);
    });

    it("answers the registry's 503 for a made token while it is stale, and still reads API_TOKENS and ADMIN_TOKEN", () => {
      issued.stale = true;
      expect(read(guard(), MADE_SCOPED)).toEqual({ refused: { status: 503, code: 'tokens_unavailable', message: 'stale' } });
      expect(read(guard(), STATIC)).toEqual({ scope: '*', detail: 'full' });
      expect(read(guard(), ADMIN)).toEqual({ scope: '*', detail: 'full' });
    });
  });

  describe('API_TOKENS set, no made token live: as before', () => {
    beforeEach(() => issued.live.clear());
    const guard = () => new ReadTokenGuard(config({ API_TOKENS: STATIC }), issued, new Reflector());

    it('keeps the refusals word for word', () => {
      expect(read(guard())).toEqual({
        refused: { status: 401, code: 'missing_token', message: 'Authorization: Bearer <token> is required: one of API_TOKENS, or ADMIN_TOKEN' },
      });
      expect(read(guard(), MADE_SCOPED)).toEqual({
        refused: { status: 403, code: 'invalid_token', message: 'The token is not one of API_TOKENS, nor ADMIN_TOKEN' },
      });
    });
  });

  describe.each([
    ['API_TOKENS unset', {}],
    ['API_TOKENS=none', { API_TOKENS: 'none' }],
  ])('%s', (_name, env) => {
    const guard = () => new ReadTokenGuard(config(env), issued, new Reflector());

    it('is open while no made token is live: everyone reads every workspace, whatever token they show', () => {
      issued.live.clear();
      for (const token of [undefined, 'anything', MADE_SCOPED]) expect(read(guard(), token)).toEqual({ scope: '*', detail: 'full' });
      expect(issued.asked).toBe(0);
    });

    it('is closed once one is live: 401 without a token, 403 with a wrong one, the made token its scope, ADMIN_TOKEN everything', () => {
      expect(read(guard())).toMatchObject({
        refused: { status: 401, message: 'Authorization: Bearer <token> is required: a live token made with POST /admin/tokens, or ADMIN_TOKEN' },
      });
      expect(read(guard(), 'wrong')).toMatchObject({
        refused: { status: 403, message: 'The token is not a live token made with POST /admin/tokens, nor ADMIN_TOKEN' },
      });
      expect(read(guard(), MADE_SCOPED)).toEqual({ scope: ['acme-eu', 'acme-us'], detail: 'public' });
      expect(read(guard(), ADMIN)).toEqual({ scope: '*', detail: 'full' });
    });

    it('opens again when the last one goes', () => {
      issued.live.clear();
      expect(read(guard())).toEqual({ scope: '*', detail: 'full' });
    });
  });

  describe('StatusAccessGuard', () => {
    it('STATUS_PUBLIC=true: without a token, the public detail of every workspace; a scoped token, the public detail of its own', () => {
      const guard = new StatusAccessGuard(config({ API_TOKENS: STATIC }), issued);
      expect(read(guard)).toEqual({ scope: '*', detail: 'public' });
      expect(read(guard, MADE_SCOPED)).toEqual({ scope: ['acme-eu', 'acme-us'], detail: 'public' });
      expect(read(guard, MADE_ALL)).toEqual({ scope: '*', detail: 'full' });
      expect(read(guard, STATIC)).toEqual({ scope: '*', detail: 'full' });
      expect(read(guard, 'wrong')).toMatchObject({ refused: { status: 403, code: 'invalid_token' } });
    });

    it('STATUS_PUBLIC=false: a token needed, a scoped one gets the public detail', () => {
      const guard = new StatusAccessGuard(config({ API_TOKENS: STATIC, STATUS_PUBLIC: 'false' }), issued);
      expect(read(guard)).toMatchObject({ refused: { status: 401, code: 'missing_token' } });
      expect(read(guard, MADE_SCOPED)).toEqual({ scope: ['acme-eu', 'acme-us'], detail: 'public' });
    });
  });

  it('@ReadScope() fails the request on a route no read guard ran for', () => {
    expect(() => paramOf(ReadScope, requestWith(STATIC))).toThrow(/neither @ReadAccess\(\) nor @StatusAccess\(\)/);
    expect(paramOf(StatusDetail, requestWith(STATIC))).toBe('public');
  });
});

describe('ReadTokenGuard: a token limited to named consumers', () => {
  const CONSUMER_ONLY = 'pzs_made_for_one_consumer';
  class Routes {
    @ConsumerRoute()
    consumerRead(): void {}

    otherRead(): void {}
  }
  const contextFor = (request: FastifyRequest, handler: keyof Routes) =>
    ({
      switchToHttp: () => ({ getRequest: () => request }),
      getHandler: () => Routes.prototype[handler],
      getClass: () => Routes,
    }) as unknown as ExecutionContext;

  function guard(): ReadTokenGuard {
    const issued = new FakeIssued();
    issued.live.set(CONSUMER_ONLY, { id: 't3', scope: WorkspaceScope.ALL, consumers: ['crm-sync'] });
    return new ReadTokenGuard(config({ API_TOKENS: STATIC }), issued, new Reflector());
  }

  it('reads the routes marked @ConsumerRoute(), which learn its consumers', () => {
    const request = requestWith(CONSUMER_ONLY);
    expect(guard().canActivate(contextFor(request, 'consumerRead'))).toBe(true);
    expect(paramOf<readonly string[] | undefined>(ReadConsumers, request)).toEqual(['crm-sync']);
  });

  it('is refused every other read with 403 consumer_token', () => {
    const request = requestWith(CONSUMER_ONLY);
    expect(thrown(() => guard().canActivate(contextFor(request, 'otherRead')))).toMatchObject({ status: 403, code: 'consumer_token' });
  });

  it('leaves every other token unlimited, on either route', () => {
    for (const token of [STATIC, ADMIN, MADE_SCOPED]) {
      const request = requestWith(token);
      expect(guard().canActivate(contextFor(request, 'otherRead'))).toBe(true);
      expect(paramOf<readonly string[] | undefined>(ReadConsumers, request)).toBeUndefined();
    }
  });
});
