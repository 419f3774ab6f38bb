/**
 * The Pozy API over the simulated workspaces, on loopback: Bearer auth (the key picks the workspace), X-Request-Id,
 * a per-minute sliding-window rate limit per API key with its headers, and the key's API faults drawn per
 * authenticated request.
 *
 * - `GET /v1/posts`: `{posts, pagination: {page, limit, total, pages}}`, plain offset paging (`page` 1-based,
 *   `limit` 1–500, default 10, above 500 a 400; `offset` wins over `page`): a post deleted before the cursor
 *   shifts later ones a place left, a post created lands wherever its order puts it. An unknown parameter is a 400.
 * - `GET /v1/accounts`: `{accounts, hasAnalyticsAccess}`, plus `pagination` only when `page` and `limit` (at most
 *   100) are both sent; one without the other is a 400.
 * - `GET|POST|PUT|DELETE /v1/webhooks/settings`: the key's subscriptions (at most 50); the logs, redeliveries and
 *   test events are the key's too.
 * - Rate limit (rate-limit.ts): every answer carries `X-RateLimit-Limit`, `-Remaining` and `-Reset` (Unix seconds
 *   when the next slot frees up); a full window answers 429 with `Retry-After` (seconds).
 */
import type { Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import Fastify, { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitStats } from './rate-limit';
import type { SubscriptionSettings } from './webhook-sender';
import { MAX_SUBSCRIPTIONS, RequestCounts, WorkspaceRuntime } from './workspace';
import { type Account, POST_SORTS, POST_STATUSES } from './world/pozy-shapes';

export interface SimulatorServerOptions {
  /** The workspace an API key opens, if any. */
  workspaceOf: (apiKey: string) => WorkspaceRuntime | undefined;
  /** The first workspace: its request ids and its rate-limit figure serve the answers no key authenticated. */
  fallback: () => WorkspaceRuntime;
  /** Pozy's clock (ms), for the `Date` header and read lag: the world's, unless a fixed one replays times. */
  now: () => number;
  port?: number;
  /** Default 127.0.0.1; 0.0.0.0 in a container, for other containers to reach it. */
  host?: string;
}

export interface ApiStats extends RateLimitStats {
  requests: number;
  /** `"GET /v1/posts/:postId"` → status (or `reset` / `timeout` for those faults) → count. */
  byRoute: Record<string, Record<string, number>>;
}

type Query = Record<string, string | string[] | undefined>;
type ErrorBody = { error: string; type?: string; code?: string; param?: string; details?: unknown };
type Handler = (request: FastifyRequest, workspace: WorkspaceRuntime) => unknown;

/** An answer other than 200, thrown from a handler and sent by the error handler. */
class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody | { success: false; message: string },
  ) {
    super('error' in body ? body.error : body.message);
  }
}

const badRequest = (error: string, param?: string, details?: unknown) =>
  new HttpFailure(400, { error, type: 'invalid_request_error', code: 'BAD_REQUEST', ...(param ? { param } : {}), ...(details ? { details } : {}) });
const NOT_FOUND = () => new HttpFailure(404, { error: 'Not found' });
const WEBHOOK_NOT_FOUND = () => new HttpFailure(404, { error: 'Webhook not found' });

const OBJECT_ID = /^[0-9a-fA-F]{24}$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;
const REQUEST_ID = /^[\w.:-]{1,128}$/;

const POST_LIST_PARAMS = [
  'page',
  'limit',
  'offset',
  'status',
  'platform',
  'profileId',
  'accountId',
  'createdBy',
  'fromDate',
  'toDate',
  'dateFrom',
  'dateTo',
  'search',
  'includeHidden',
  'sortBy',
  'source',
] as const;
const ACCOUNT_LIST_PARAMS = ['profileId', 'platform', 'status', 'includeOverLimit', 'page', 'limit'] as const;
const LOG_PARAMS = ['limit', 'skip', 'status', 'event', 'eventId', 'webhookId'] as const;
/** The event types a subscription can name: Pozy's post and account events (the simulator emits no others). */
export const SUBSCRIBABLE_EVENTS = [
  'post.scheduled',
  'post.published',
  'post.partial',
  'post.failed',
  'post.cancelled',
  'post.recycled',
  'post.platform.published',
  'post.platform.failed',
  'post.platform.deleted',
  'post.tiktok.url_resolved',
  'account.connected',
  'account.disconnected',
] as const;
const SUBSCRIPTION_FIELDS = ['name', 'url', 'secret', 'events', 'isActive'] as const;
const NAME_MAX = 50;
const URL_MAX = 2048;
const SECRET_MAX = 1000;

export class SimulatorServer {
  private readonly app: FastifyInstance;
  private readonly held = new Set<Socket>();
  private readonly faulted = new WeakSet<FastifyRequest>();
  /** The workspace each authenticated request's key opened. */
  private readonly workspaces = new WeakMap<FastifyRequest, WorkspaceRuntime>();
  /** Requests no key authenticated (401s). */
  private readonly unauthenticated = new RequestCounts();
  private address = '';

  private constructor(options: SimulatorServerOptions) {
    // forceCloseConnections: close() also ends keep-alive and held (timeout fault) connections.
    this.app = Fastify({ logger: false, forceCloseConnections: true, bodyLimit: 1024 * 1024 });
    const routes = new Routes(
      options,
      (request, workspace) => this.workspaces.set(request, workspace),
      (request) => this.workspaceOf(request),
      (request, label) => this.countFault(request, label),
      (socket) => this.hold(socket),
    );
    routes.register(this.app);
    this.app.addHook('onResponse', async (request, reply) => {
      if (!this.faulted.has(request)) this.count(request, String(reply.statusCode));
    });
  }

  static async start(options: SimulatorServerOptions): Promise<SimulatorServer> {
    const server = new SimulatorServer(options);
    try {
      await server.app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
    } catch (error) {
      await server.app.close();
      throw error;
    }
    const address = server.app.server.address();
    if (typeof address !== 'object' || !address) throw new Error('The simulator is not listening');
    server.address = `http://127.0.0.1:${address.port}`;
    return server;
  }

  /** `http://127.0.0.1:<port>`, the API's base URL. */
  get url(): string {
    return this.address;
  }

  /** The requests no key authenticated. */
  unauthenticatedCounts(): Pick<ApiStats, 'requests' | 'byRoute'> {
    return this.unauthenticated.snapshot();
  }

  async close(): Promise<void> {
    for (const socket of this.held) socket.destroy();
    await this.app.close();
  }

  private workspaceOf(request: FastifyRequest): WorkspaceRuntime {
    const workspace = this.workspaces.get(request);
    // Every route runs after authenticate(), which answers 401 for a request without one.
    if (!workspace) throw new Error('A request reached a route without a workspace');
    return workspace;
  }

  private hold(socket: Socket): void {
    this.held.add(socket);
    socket.once('close', () => this.held.delete(socket));
  }

  private countFault(request: FastifyRequest, label: string): void {
    this.faulted.add(request);
    this.count(request, label);
  }

  private count(request: FastifyRequest, status: string): void {
    const route = `${request.method} ${request.routeOptions.url ?? '(no route)'}`;
    (this.workspaces.get(request)?.counts ?? this.unauthenticated).add(route, status);
  }
}

class Routes {
  constructor(
    private readonly options: SimulatorServerOptions,
    private readonly bind: (request: FastifyRequest, workspace: WorkspaceRuntime) => void,
    private readonly workspaceOf: (request: FastifyRequest) => WorkspaceRuntime,
    private readonly countFault: (request: FastifyRequest, label: string) => void,
    private readonly hold: (socket: Socket) => void,
  ) {}

  register(app: FastifyInstance): void {
    app.addHook('onRequest', async (request, reply) => this.authenticate(request, reply));
    app.setErrorHandler(async (error: unknown, _request, reply) => {
      if (error instanceof HttpFailure) return reply.code(error.status).send(error.body);
      const status = (error as { statusCode?: unknown }).statusCode;
      if (typeof status === 'number' && status >= 400 && status < 500) {
        return reply.code(status).send({ error: (error as Error).message, type: 'invalid_request_error', code: 'BAD_REQUEST' });
      }
      return reply.code(500).send({ error: 'Internal server error', type: 'api_error', code: 'INTERNAL_ERROR' });
    });
    app.setNotFoundHandler(async (request, reply) => {
      if (await this.faults(request, reply, this.workspaceOf(request))) return reply;
      return reply.code(404).send({ error: 'Not found' });
    });

    this.route(app, 'GET', '/v1/posts/:postId', (request, ws) => {
      const { postId } = request.params as { postId: string };
      if (!OBJECT_ID.test(postId)) throw badRequest('Invalid post id: expected a 24-character hex ObjectId', 'postId');
      const post = ws.world.getPost(postId.toLowerCase());
      if (!post || this.lagging(ws, Date.parse(post.updatedAt))) throw NOT_FOUND();
      return { post };
    });
    this.route(app, 'GET', '/v1/posts', (request, ws) => this.listPosts(ws, request.query as Query));
    this.route(app, 'GET', '/v1/accounts', (request, ws) => this.listAccounts(ws, request.query as Query));
    this.route(app, 'GET', '/v1/webhooks/settings', (_request, ws) => ({ webhooks: ws.sender.subscriptions() }));
    this.route(app, 'POST', '/v1/webhooks/settings', (request, ws) => this.createSubscription(ws, request.body));
    this.route(app, 'PUT', '/v1/webhooks/settings', (request, ws) => this.updateSubscription(ws, request.body));
    this.route(app, 'DELETE', '/v1/webhooks/settings', (request, ws) => this.deleteSubscription(ws, request.query as Query));
    this.route(app, 'GET', '/v1/webhooks/logs', (request, ws) => this.listLogs(ws, request.query as Query));
    this.route(app, 'POST', '/v1/webhooks/logs/redeliver', (request, ws) => this.redeliver(ws, request.body));
    this.route(app, 'POST', '/v1/webhooks/test', (request, ws) => this.sendTest(ws, request.body));
  }

  // ---- the gate: auth and rate limit before the body is read, faults before the handler ----

  private async authenticate(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const authorization = request.headers.authorization;
    const key = authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined;
    const ws = key === undefined ? undefined : this.options.workspaceOf(key);
    const given = request.headers['x-request-id'];
    reply.header('X-Request-Id', typeof given === 'string' && REQUEST_ID.test(given) ? given : (ws ?? this.options.fallback()).ids.uuid());
    // Pozy's clock, not this host's: a simulator whose clock lags says so here, as Pozy's servers would.
    reply.header('Date', new Date(this.options.now()).toUTCString());
    const now = Date.now();
    if (!ws) {
      // No key, no window of its own: an untouched one, of the first workspace's figure.
      const limit = this.options.fallback().limiter.window.limit;
      reply.header('X-RateLimit-Limit', String(limit));
      reply.header('X-RateLimit-Remaining', String(limit));
      reply.header('X-RateLimit-Reset', String(Math.ceil(now / 1000)));
      return reply.code(401).send({ error: 'Unauthorized' });
    }
    this.bind(request, ws);
    const window = ws.limiter.window;
    const allowed = ws.limiter.admit(now);
    this.rateHeaders(ws, reply, now);
    if (!allowed) {
      const nextFree = window.nextFree(now);
      const retryAfter = Math.max(1, Math.ceil((nextFree - now) / 1000));
      const windowSeconds = window.windowMs / 1000;
      return reply
        .code(429)
        .header('Retry-After', String(retryAfter))
        .send({
          error: `Rate limit exceeded: ${window.limit} requests per ${windowSeconds === 60 ? 'minute' : `${windowSeconds} s`}`,
          type: 'rate_limit_error',
          code: 'RATE_LIMITED',
          details: { limit: window.limit, remaining: 0, windowSeconds, retryAfter, resetAt: new Date(nextFree).toISOString() },
        });
    }
    return undefined;
  }

  private rateHeaders(ws: WorkspaceRuntime, reply: FastifyReply, now: number): void {
    const window = ws.limiter.window;
    reply.header('X-RateLimit-Limit', String(window.limit));
    reply.header('X-RateLimit-Remaining', String(Math.max(0, window.limit - window.used(now))));
    reply.header('X-RateLimit-Reset', String(Math.ceil(window.nextFree(now) / 1000)));
  }

  /** Applies this request's faults (its workspace's); true when a fault answered (or will never answer) in place of the handler. */
  private async faults(request: FastifyRequest, reply: FastifyReply, ws: WorkspaceRuntime): Promise<boolean> {
    const faults = ws.faults();
    const rng = ws.apiRng;
    // Every draw up front, in a fixed order, so which fault fires does not shift the stream for later requests.
    const reset = rng.chance(faults.apiResetRate);
    const hang = rng.chance(faults.apiTimeoutRate);
    const fail = rng.chance(faults.api5xxRate);
    const throttle = rng.chance(faults.api429Rate);
    const slow = rng.chance(faults.apiSlowRate);
    if (reset) {
      this.countFault(request, 'reset');
      reply.hijack();
      request.raw.socket.resetAndDestroy();
      return true;
    }
    if (hang) {
      this.countFault(request, 'timeout');
      reply.hijack();
      // Held until the client gives up or the simulator stops.
      this.hold(request.raw.socket);
      return true;
    }
    const wait = faults.apiLatencyMs + (slow ? faults.apiSlowMs : 0);
    if (wait > 0) await delay(wait);
    if (fail) {
      await reply.code(500).send({ error: 'Internal server error', type: 'api_error', code: 'INTERNAL_ERROR' });
      return true;
    }
    if (throttle) {
      if (faults.api429RetryAfter !== '') reply.header('Retry-After', faults.api429RetryAfter);
      if (faults.api429RateLimitReset !== '') reply.header('X-RateLimit-Reset', faults.api429RateLimitReset);
      const retryAfter = /^\d+$/.test(faults.api429RetryAfter) ? Number(faults.api429RetryAfter) : faults.api429RetryAfter;
      await reply.code(429).send({ error: 'Too many requests', type: 'rate_limit_error', code: 'RATE_LIMITED', details: { retryAfter } });
      return true;
    }
    return false;
  }

  private route(app: FastifyInstance, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, handler: Handler): void {
    app.route({
      method,
      url: path,
      handler: async (request, reply) => {
        const ws = this.workspaceOf(request);
        if (await this.faults(request, reply, ws)) return reply;
        return reply.send(await handler(request, ws));
      },
    });
  }

  // ---- posts ----

  private listPosts(ws: WorkspaceRuntime, query: Query): unknown {
    accept(query, POST_LIST_PARAMS);
    const limit = intParam(query, 'limit', 1, 500, 10);
    const page = intParam(query, 'page', 1, Number.MAX_SAFE_INTEGER, 1);
    const offset = optionalInt(query, 'offset', 0, Number.MAX_SAFE_INTEGER);
    const status = enumParam(query, 'status', POST_STATUSES);
    const platform = single(query, 'platform');
    const profileParam = single(query, 'profileId');
    const profileId =
      profileParam === undefined || profileParam === '' || profileParam === 'all' ? undefined : objectIdParam('profileId', profileParam);
    const accountParam = single(query, 'accountId');
    const accountId = accountParam === undefined ? undefined : objectIdParam('accountId', accountParam);
    const createdByParam = single(query, 'createdBy');
    const createdBy = createdByParam === undefined ? undefined : objectIdParam('createdBy', createdByParam);
    // The deprecated aliases still work; the current names win.
    const from = dateParam(query, single(query, 'fromDate') !== undefined ? 'fromDate' : 'dateFrom', 'start');
    const to = dateParam(query, single(query, 'toDate') !== undefined ? 'toDate' : 'dateTo', 'end');
    const search = single(query, 'search')?.toLowerCase();
    enumParam(query, 'includeHidden', ['true', 'false'] as const);
    const sortBy = enumParam(query, 'sortBy', POST_SORTS) ?? 'scheduled-desc';
    const source = enumParam(query, 'source', ['pozy', 'external'] as const) ?? 'pozy';

    const start = offset ?? (page - 1) * limit;
    // The simulator holds only posts made through Pozy: none come from outside.
    const { posts, total } =
      source === 'external'
        ? { posts: [], total: 0 }
        : ws.world.queryPosts({ status, platform, profileId, accountId, createdBy, from, to, search, sortBy, offset: start, limit });
    return {
      posts,
      pagination: { page: offset === undefined ? page : Math.floor(offset / limit) + 1, limit, total, pages: Math.ceil(total / limit) },
    };
  }

  // ---- accounts ----

  private listAccounts(ws: WorkspaceRuntime, query: Query): unknown {
    accept(query, ACCOUNT_LIST_PARAMS);
    const profileParam = single(query, 'profileId');
    const profileId = profileParam === undefined ? undefined : objectIdParam('profileId', profileParam);
    const platform = single(query, 'platform');
    const status = enumParam(query, 'status', ['connected', 'disconnected'] as const);
    enumParam(query, 'includeOverLimit', ['true', 'false'] as const);
    if ((single(query, 'page') === undefined) !== (single(query, 'limit') === undefined)) {
      throw badRequest('page and limit must be sent together', single(query, 'page') === undefined ? 'page' : 'limit');
    }
    const paged = single(query, 'page') !== undefined;
    const filters = { profileId, platform, connected: status === undefined ? undefined : status === 'connected' };
    const settled = (accounts: Account[]) => accounts.filter((account) => !this.lagging(ws, ws.world.accountChangedAt(account._id) ?? -Infinity));
    if (!paged) return { accounts: settled(ws.world.queryAccounts(filters).accounts), hasAnalyticsAccess: false };
    const page = intParam(query, 'page', 1, Number.MAX_SAFE_INTEGER, 1);
    const limit = intParam(query, 'limit', 1, 100, 100);
    const { accounts, total } = ws.world.queryAccounts({ ...filters, offset: (page - 1) * limit, limit });
    return { accounts: settled(accounts), hasAnalyticsAccess: false, pagination: { page, limit, total, pages: Math.ceil(total / limit) } };
  }

  /** Whether a record that last changed at `changedAt` (Pozy's clock) is still missing from a lagging read replica. */
  private lagging(ws: WorkspaceRuntime, changedAt: number): boolean {
    const lag = ws.faults().apiReadLagMs;
    return lag > 0 && this.options.now() - changedAt < lag;
  }

  // ---- webhooks ----

  private listLogs(ws: WorkspaceRuntime, query: Query): unknown {
    accept(query, LOG_PARAMS);
    const limit = intParam(query, 'limit', 1, 100, 50);
    const skip = intParam(query, 'skip', 0, 10_000, 0);
    const status = enumParam(query, 'status', ['success', 'failed'] as const);
    const event = stringParam(query, 'event', 100);
    const eventId = stringParam(query, 'eventId', 200);
    const webhookId = stringParam(query, 'webhookId', 100);
    const { rows, total } = ws.sender.logs({ limit, skip, status, event, eventId, webhookId });
    return { logs: rows, pagination: { total, limit, skip, pages: Math.ceil(total / limit), hasMore: skip + rows.length < total } };
  }

  private async redeliver(ws: WorkspaceRuntime, body: unknown): Promise<unknown> {
    const { webhookId, eventId } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    if (typeof webhookId !== 'string' || webhookId === '') throw badRequest('webhookId is required', 'webhookId');
    if (typeof eventId !== 'string' || eventId === '') throw badRequest('eventId is required', 'eventId');
    this.knownWebhook(ws, webhookId);
    const result = await ws.sender.redeliver(webhookId, eventId);
    switch (result.outcome) {
      case 'success':
        return { success: true, message: 'Webhook re-delivered' };
      case 'failed':
        throw new HttpFailure(502, { success: false, message: result.message });
      case 'no_url':
        throw badRequest('The webhook has no URL');
      case 'not_found':
        throw new HttpFailure(422, {
          error: 'No delivery of this event in the last 30 days',
          type: 'invalid_request_error',
          code: 'VALIDATION_ERROR',
          param: 'eventId',
        });
    }
  }

  private async sendTest(ws: WorkspaceRuntime, body: unknown): Promise<unknown> {
    const { webhookId } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    if (typeof webhookId !== 'string' || webhookId === '') throw badRequest('webhookId is required', 'webhookId');
    this.knownWebhook(ws, webhookId);
    if (ws.sender.urlOf(webhookId) === undefined) throw badRequest('The webhook has no URL');
    const { ok } = await ws.sender.sendTest(webhookId);
    if (!ok) throw new HttpFailure(500, { success: false, message: 'Test webhook failed' });
    return { success: true, message: 'Test webhook sent successfully' };
  }

  /** Another key's subscription is as unknown as one that never existed. */
  private knownWebhook(ws: WorkspaceRuntime, webhookId: string): void {
    if (!ws.sender.subscription(webhookId)) throw WEBHOOK_NOT_FOUND();
  }

  // ---- subscriptions ----

  private createSubscription(ws: WorkspaceRuntime, body: unknown): unknown {
    const fields = subscriptionFields(body, SUBSCRIPTION_FIELDS);
    for (const required of ['name', 'url', 'events'] as const) {
      if (fields[required] === undefined) throw badRequest(`${required} is required`, required);
    }
    if (ws.sender.subscriptionCount >= MAX_SUBSCRIPTIONS) throw badRequest(`At most ${MAX_SUBSCRIPTIONS} webhooks per user`);
    const webhook = ws.sender.addSubscription({
      name: fields.name!,
      url: fields.url!,
      secret: fields.secret,
      events: fields.events!,
      isActive: fields.isActive,
    });
    return { success: true, webhook };
  }

  private updateSubscription(ws: WorkspaceRuntime, body: unknown): unknown {
    const fields = subscriptionFields(body, ['_id', ...SUBSCRIPTION_FIELDS]);
    if (fields._id === undefined) throw badRequest('_id is required', '_id');
    const { _id, ...patch } = fields;
    const webhook = ws.sender.updateSubscription(_id, patch);
    if (!webhook) throw WEBHOOK_NOT_FOUND();
    return { success: true, webhook };
  }

  private deleteSubscription(ws: WorkspaceRuntime, query: Query): unknown {
    accept(query, ['id']);
    const id = stringParam(query, 'id', 100);
    if (id === undefined) throw badRequest('id is required', 'id');
    if (!ws.sender.removeSubscription(id)) throw WEBHOOK_NOT_FOUND();
    return { success: true };
  }
}

/**
 * A subscription body's fields, each checked: `name` 1–50 characters, `url` an http(s) URL (trimmed), `secret` a
 * string ('' for none), `events` a non-empty list of SUBSCRIBABLE_EVENTS, `isActive` a boolean, `_id` a string.
 * Any other field is a 400 naming it, so a misspelt one is not silently ignored.
 */
function subscriptionFields(body: unknown, accepted: readonly string[]): Partial<SubscriptionSettings> & { _id?: string; url?: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('The body must be a JSON object');
  const given = body as Record<string, unknown>;
  const unknown = Object.keys(given).filter((name) => !accepted.includes(name));
  if (unknown.length > 0) {
    const hint = unknown.includes('customHeaders') ? ' (the simulator sends no custom headers)' : '';
    throw badRequest(`Unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}${hint}. Accepted: ${accepted.join(', ')}`, unknown[0]);
  }
  const fields: Partial<SubscriptionSettings> & { _id?: string; url?: string } = {};
  if (given._id !== undefined) {
    if (typeof given._id !== 'string' || given._id === '') throw badRequest('_id must be a webhook id', '_id');
    fields._id = given._id;
  }
  if (given.name !== undefined) {
    const name = typeof given.name === 'string' ? given.name.trim() : '';
    if (name.length < 1 || name.length > NAME_MAX) throw badRequest(`name must be 1 to ${NAME_MAX} characters`, 'name');
    fields.name = name;
  }
  if (given.url !== undefined) fields.url = urlField(given.url);
  if (given.secret !== undefined) {
    if (typeof given.secret !== 'string' || given.secret.length > SECRET_MAX)
      throw badRequest(`secret must be a string of at most ${SECRET_MAX} characters`, 'secret');
    fields.secret = given.secret;
  }
  if (given.events !== undefined) {
    const events = given.events;
    const known = (e: unknown) => typeof e === 'string' && (SUBSCRIBABLE_EVENTS as readonly string[]).includes(e);
    if (!Array.isArray(events) || events.length === 0 || !events.every(known)) {
      throw badRequest(`events must be a non-empty list of: ${SUBSCRIBABLE_EVENTS.join(', ')}`, 'events');
    }
    fields.events = events as string[];
  }
  if (given.isActive !== undefined) {
    if (typeof given.isActive !== 'boolean') throw badRequest('isActive must be true or false', 'isActive');
    fields.isActive = given.isActive;
  }
  return fields;
}

function urlField(value: unknown): string {
  const url = typeof value === 'string' ? value.trim() : '';
  let parsed: URL | undefined;
  try {
    parsed = url.length <= URL_MAX ? new URL(url) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) throw badRequest('url must be a valid http or https URL', 'url');
  return url;
}

// ---- query parameters: every one given at most once, and checked ----

function accept(query: Query, accepted: readonly string[]): void {
  const unknown = Object.keys(query).filter((name) => !accepted.includes(name));
  if (unknown.length > 0) {
    throw badRequest(`Unknown query parameter${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}. Accepted: ${accepted.join(', ')}`, unknown[0], {
      unknown,
      accepted,
    });
  }
}

function single(query: Query, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw badRequest(`${name} must be given once`, name);
  return value;
}

function optionalInt(query: Query, name: string, min: number, max: number): number | undefined {
  const raw = single(query, name);
  if (raw === undefined) return undefined;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw badRequest(`${name} must be an integer from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ' up'}`, name);
  }
  return value;
}

function intParam(query: Query, name: string, min: number, max: number, fallback: number): number {
  return optionalInt(query, name, min, max) ?? fallback;
}

function enumParam<T extends string>(query: Query, name: string, values: readonly T[]): T | undefined {
  const raw = single(query, name);
  if (raw === undefined) return undefined;
  if (!(values as readonly string[]).includes(raw)) throw badRequest(`${name} must be one of: ${values.join(', ')}`, name);
  return raw as T;
}

function stringParam(query: Query, name: string, maxLength: number): string | undefined {
  const raw = single(query, name);
  if (raw !== undefined && (raw.length < 1 || raw.length > maxLength)) throw badRequest(`${name} must be 1 to ${maxLength} characters`, name);
  return raw;
}

function objectIdParam(name: string, value: string): string {
  if (!OBJECT_ID.test(value)) throw badRequest(`${name} must be a 24-character hex ObjectId`, name);
  return value.toLowerCase();
}

/** `YYYY-MM-DD` (the whole day, UTC) or an ISO date-time, as ms; `edge` says which end of a day-only date. */
function dateParam(query: Query, name: string, edge: 'start' | 'end'): number | undefined {
  const raw = single(query, name);
  if (raw === undefined) return undefined;
  const ms = DATE_ONLY.test(raw) || DATE_TIME.test(raw) ? Date.parse(DATE_ONLY.test(raw) ? `${raw}T00:00:00Z` : raw) : NaN;
  if (Number.isNaN(ms)) throw badRequest(`${name} must be YYYY-MM-DD or an ISO 8601 date-time`, name);
  return DATE_ONLY.test(raw) && edge === 'end' ? ms + 86_400_000 - 1 : ms;
}
