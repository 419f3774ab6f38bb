import { Logger } from '@nestjs/common';
import { ClassConstructor, plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { Dispatcher } from 'undici';
import { boundedText } from '../common/bounded-text';
import { describeError, fullJitterBackoff, isNetworkError } from '../common/http-retry';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { Lane } from './budget/budget-policy';
import { KeyPausedError, MAX_PAUSE_WAITED_IN_JOB_MS, PozyBudget } from './budget/pozy-budget.service';
import { PozyClock } from './pozy-clock.service';
import { PozyAccountDto } from './dto/pozy-account.dto';
import { checkedAccount, checkedPost } from './dto/pozy-answer-check';
import { PozyPostDto } from './dto/pozy-post.dto';
import { PozyWebhookLogDto } from './dto/pozy-webhook-log.dto';
import { PozyWebhookSubscriptionDto } from './dto/pozy-webhook-subscription.dto';
import { PozyProtocolError, PozyRateLimitedError, PozyUnavailableError } from './pozy-errors';
import { integerHeader, rateLimitWait } from './rate-limit-headers';
import { Span, SpanKind } from '@opentelemetry/api';
import { traceHeaders } from '../tracing/trace-context';
import { Tracing } from '../tracing/tracing.service';

/** A Retry-After longer than this is not waited out by a run's request: it fails and retries after it instead. */
const MAX_INLINE_RETRY_AFTER_MS = 30_000;
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 5_000;
/** What an error quotes of an answer the client does not use (a 429, a 5xx, another 4xx): the rest is never read. */
const EXCERPT_BYTES = 1_024;

/**
 * What Pozy answered, and when the request that got the answer was sent: the state is at least that recent.
 * `retried`: what each earlier attempt of the request got (`429`, `503`, `none` for no answer), oldest first.
 */
export type PostAnswer = ({ found: true; post: PozyPostDto } | { found: false }) & { sentAt: Date; retried: readonly string[] };
export interface AccountsAnswer {
  accounts: PozyAccountDto[];
  sentAt: Date;
  retried: readonly string[];
}

/** One page of `GET /v1/posts`, oldest created first. */
export interface PostsPage {
  posts: PozyPostDto[];
  /** Posts Pozy says the whole list holds now, when it says. */
  total: number | undefined;
  sentAt: Date;
}

/** What Pozy said of a key: `accepted`, or refused with Pozy's status and answer (bounded). */
export type KeyCheck = { accepted: true } | { accepted: false; status: number; answer: string };

/** A subscription to create in Pozy (`POST /v1/webhooks/settings`). */
export interface NewPozySubscription {
  name: string;
  url: string;
  secret: string;
  events: readonly string[];
}

export interface WebhookLogsPage {
  logs: PozyWebhookLogDto[];
  hasMore: boolean;
  total: number | undefined;
}

interface Attempt {
  status: number;
  /** An expected answer's body, parsed. */
  body: unknown;
  /** Any other answer's first bytes, as text, for the error that quotes it. */
  excerpt: string;
  /** An expected answer was larger than POZY_MAX_RESPONSE_BYTES: cut off there, unread. */
  tooLarge: boolean;
  /** An expected answer's body was not JSON. */
  notJson: boolean;
  headers: Dispatcher.ResponseData['headers'];
  sentAt: Date;
  /** What the request's earlier attempts got, oldest first (`429`, `500`, `none`). */
  retried: readonly string[];
}

/** The largest page `GET /v1/posts` serves. */
export const POSTS_PAGE_LIMIT = 500;

/** What one client is made of: PozyClients (pozy-clients.service.ts) makes them, one per API key and URL. */
export interface PozyClientParts {
  /** The keep-alive pool to the API's origin, shared by every key on that host. */
  pool: Dispatcher;
  /** The API URL's path, without a trailing slash ('' at the root). */
  basePath: string;
  apiKey: string;
  /** The key's budget, shared by every client (and replica) using the key. */
  budget: PozyBudget;
  clock: PozyClock;
  metrics: MetricsService;
  config: AppConfig;
  tracing: Tracing;
  /** Told when Pozy refuses the key (401, 403) on a read that expected an answer. */
  keyRejected?: (status: number, route: string) => void;
}

/**
 * Pozy's API for one API key, as pozy-sync reads it: Bearer auth over a keep-alive pool, a timeout per request,
 * retries of 429 (after Retry-After), 5xx, resets and timeouts with exponential backoff and full jitter, every
 * request paid from the key's shared budget in its caller's lane, and answers validated before anything uses them.
 * No answer is read past POZY_MAX_RESPONSE_BYTES, nor one it does not use past what its error quotes.
 *
 * Injected as such, it is the environment's workspace's client (POZY_API_KEY at POZY_API_URL: pozy.module.ts);
 * `PozyClients.forWorkspace` gives any other workspace's.
 */
export class PozyClient {
  private readonly logger = new Logger(PozyClient.name);
  private readonly pool: Dispatcher;
  private readonly basePath: string;
  private readonly apiKey: string;
  private readonly budget: PozyBudget;
  private readonly clock: PozyClock;
  private readonly metrics: MetricsService;
  private readonly config: AppConfig;
  private readonly tracing: Tracing;
  private readonly keyRejected: PozyClientParts['keyRejected'];

  constructor(parts: PozyClientParts) {
    this.pool = parts.pool;
    this.basePath = parts.basePath;
    this.apiKey = parts.apiKey;
    this.budget = parts.budget;
    this.clock = parts.clock;
    this.metrics = parts.metrics;
    this.config = parts.config;
    this.tracing = parts.tracing;
    this.keyRejected = parts.keyRejected;
  }

  /** The key's budget (the same object for every client of the key in this process). */
  get keyBudget(): PozyBudget {
    return this.budget;
  }

  /**
   * `GET /v1/posts/{id}`; a 404 means the post is gone (or never was). `once`: a single attempt, for a caller that
   * waits on the answer and has a fallback (an operator's request), rather than the retries a job can afford.
   */
  async getPost(postId: string, lane: Lane, options: { once?: boolean } = {}): Promise<PostAnswer> {
    const path = `/v1/posts/${encodeURIComponent(postId)}`;
    const { status, body, sentAt, retried } = await this.get(path, 'GET /v1/posts/:id', [200, 404], lane, options.once ? 0 : undefined);
    if (status === 404) return { found: false, sentAt, retried };
    const post = validated(PozyPostDto, (body as { post?: unknown } | null)?.post, 'post');
    if (post._id !== postId) throw new PozyProtocolError(`Pozy answered post ${post._id} for ${postId}`);
    return { found: true, post, sentAt, retried };
  }

  /**
   * `GET /v1/accounts?profileId=`: every account of the profile. `includeOverLimit`: Pozy leaves accounts over the
   * plan's limit out by default, and an account left out would be taken for a removed one.
   */
  async listAccounts(profileId: string, lane: Lane): Promise<AccountsAnswer> {
    const answer = await this.accounts(`profileId=${encodeURIComponent(profileId)}&includeOverLimit=true`, lane);
    const stranger = answer.accounts.find((account) => account.profileId !== profileId);
    if (stranger) throw new PozyProtocolError(`Pozy listed account ${stranger._id} of profile ${stranger.profileId} for ${profileId}`);
    return answer;
  }

  /**
   * `GET /v1/accounts` without paging: every account of every profile in one answer, which is a consistent
   * snapshot (pages of a list that changes between them are not).
   */
  listAllAccounts(lane: Lane): Promise<AccountsAnswer> {
    return this.accounts('includeOverLimit=true', lane);
  }

  /**
   * One page of `GET /v1/posts` from `offset`, oldest created first, so that posts created meanwhile land after the
   * cursor; hidden posts included, since `GET /v1/posts/{id}` answers them too.
   */
  async listPostsPage(offset: number, limit: number, lane: Lane): Promise<PostsPage> {
    const query = `offset=${offset}&limit=${limit}&sortBy=created-asc&includeHidden=true`;
    const { body, sentAt } = await this.get(`/v1/posts?${query}`, 'GET /v1/posts', [200], lane);
    const { posts, pagination } = (body ?? {}) as { posts?: unknown; pagination?: { total?: unknown } };
    if (!Array.isArray(posts)) throw new PozyProtocolError('Pozy answered posts without a `posts` array');
    return {
      posts: posts.map((post, i) => validated(PozyPostDto, post, `posts[${i}]`)),
      total: typeof pagination?.total === 'number' ? pagination.total : undefined,
      sentAt,
    };
  }

  private async accounts(query: string, lane: Lane): Promise<AccountsAnswer> {
    const { body, sentAt, retried } = await this.get(`/v1/accounts?${query}`, 'GET /v1/accounts', [200], lane);
    const list = (body as { accounts?: unknown } | null)?.accounts;
    if (!Array.isArray(list)) throw new PozyProtocolError('Pozy answered accounts without an `accounts` array');
    return { accounts: list.map((account, i) => validated(PozyAccountDto, account, `accounts[${i}]`)), sentAt, retried };
  }

  /** One page of `GET /v1/webhooks/logs`, newest first (`skip` at most 10,000, `limit` at most 100). */
  async listWebhookLogs(query: { limit: number; skip: number; event?: string }): Promise<WebhookLogsPage> {
    const params = new URLSearchParams({ limit: String(query.limit), skip: String(query.skip) });
    if (query.event) params.set('event', query.event);
    const { body } = await this.get(`/v1/webhooks/logs?${params.toString()}`, 'GET /v1/webhooks/logs', [200], 'backfill');
    const { logs, pagination } = (body ?? {}) as { logs?: unknown; pagination?: { hasMore?: unknown; total?: unknown } };
    if (!Array.isArray(logs)) throw new PozyProtocolError('Pozy answered webhook logs without a `logs` array');
    return {
      logs: logs.map((row, i) => validated(PozyWebhookLogDto, row, `logs[${i}]`)),
      hasMore: pagination?.hasMore === true,
      total: typeof pagination?.total === 'number' ? pagination.total : undefined,
    };
  }

  /**
   * Whether Pozy accepts the key, with one cheap read (the first post of `GET /v1/posts`) and no retry: a 401 or 403
   * is a refusal, quoted; a failure to reach Pozy throws PozyUnavailableError, a 429 PozyRateLimitedError.
   */
  async checkKey(): Promise<KeyCheck> {
    const { status, body } = await this.request('GET', '/v1/posts?limit=1&offset=0', 'GET /v1/posts', [200, 401, 403], 'operator', undefined, 0);
    if (status === 200) return { accepted: true };
    const said = (body as { error?: unknown } | null)?.error;
    return { accepted: false, status, answer: boundedText(typeof said === 'string' ? said : JSON.stringify(body)) };
  }

  /** `GET /v1/webhooks/settings`: the key's subscriptions. */
  async listSubscriptions(): Promise<PozyWebhookSubscriptionDto[]> {
    const { body } = await this.request('GET', '/v1/webhooks/settings', 'GET /v1/webhooks/settings', [200], 'operator');
    const list = (body as { webhooks?: unknown } | null)?.webhooks;
    if (!Array.isArray(list)) throw new PozyProtocolError('Pozy answered webhook settings without a `webhooks` array');
    return list.map((row, i) => validated(PozyWebhookSubscriptionDto, row, `webhooks[${i}]`));
  }

  /** `POST /v1/webhooks/settings`, once (a retry could make two). */
  async createSubscription(subscription: NewPozySubscription): Promise<PozyWebhookSubscriptionDto> {
    const body = { ...subscription, events: [...subscription.events], isActive: true };
    const answer = await this.request('POST', '/v1/webhooks/settings', 'POST /v1/webhooks/settings', [200, 201], 'operator', body, 0);
    return validated(PozyWebhookSubscriptionDto, (answer.body as { webhook?: unknown } | null)?.webhook, 'webhook');
  }

  /** `PUT /v1/webhooks/settings`: changes a subscription (`{ isActive: true }` re-enables it); false when Pozy knows no such id. */
  async updateSubscription(id: string, change: { isActive?: boolean; secret?: string; url?: string }): Promise<boolean> {
    const { status } = await this.request(
      'PUT',
      '/v1/webhooks/settings',
      'PUT /v1/webhooks/settings',
      [200, 404],
      'operator',
      { _id: id, ...change },
      0,
    );
    return status === 200;
  }

  /** `DELETE /v1/webhooks/settings?id=`; false when Pozy knows no such id (removed already). */
  async deleteSubscription(id: string): Promise<boolean> {
    const path = `/v1/webhooks/settings?id=${encodeURIComponent(id)}`;
    const { status } = await this.request('DELETE', path, 'DELETE /v1/webhooks/settings', [200, 404], 'operator');
    return status === 200;
  }

  /** `POST /v1/webhooks/test`: Pozy sends one test event to the subscription now; whether the endpoint answered 2xx. */
  async sendTestEvent(id: string): Promise<{ delivered: boolean; answer: string }> {
    const { status, body } = await this.request('POST', '/v1/webhooks/test', 'POST /v1/webhooks/test', [200, 500], 'operator', { webhookId: id }, 0);
    const message = (body as { message?: unknown } | null)?.message;
    return { delivered: status === 200, answer: boundedText(typeof message === 'string' ? message : `HTTP ${status}`) };
  }

  private get(path: string, route: string, expected: number[], lane: Lane, maxRetries = this.config.pozy.maxRetries): Promise<Attempt> {
    return this.request('GET', path, route, expected, lane, undefined, maxRetries);
  }

  /** One CLIENT span per request (its retries, budget waits and 429s inside it), named by the route. */
  private request(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    route: string,
    expected: number[],
    lane: Lane,
    body?: object,
    maxRetries = this.config.pozy.maxRetries,
  ): Promise<Attempt> {
    const attributes = { 'http.request.method': method, 'http.route': route, 'pozy_sync.lane': lane };
    return this.tracing.span(route, { kind: SpanKind.CLIENT, attributes }, (span) =>
      this.attempts(method, path, route, expected, lane, body, maxRetries, span),
    );
  }

  private async attempts(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    route: string,
    expected: number[],
    lane: Lane,
    body: object | undefined,
    maxRetries: number,
    span: Span,
  ): Promise<Attempt> {
    let lastError: PozyUnavailableError | undefined;
    const retried: string[] = [];
    for (let attempt = 0; attempt <= maxRetries; attempt += 1) {
      if (attempt > 0) span.addEvent('retry', { 'pozy_sync.attempt': attempt + 1, ...(lastError ? { 'error.message': lastError.message } : {}) });
      if (attempt > 0 && lastError) await sleep(backoff(attempt));
      const take = () =>
        this.budget.take(lane).catch((error: unknown) => {
          // A job's read gives its worker's place back rather than wait out a long pause of the key.
          throw error instanceof KeyPausedError ? new PozyRateLimitedError(error.pausedForMs) : error;
        });
      const grant = span.isRecording() ? await this.tracing.span('pozy.budget.wait', { attributes: { 'pozy_sync.lane': lane } }, take) : await take();
      span.setAttribute('pozy_sync.retries', attempt);
      let result: Attempt;
      const started = performance.now();
      try {
        result = await this.send(method, path, expected, body);
      } catch (error) {
        this.count(route, 0, started);
        if (!isNetworkError(error)) throw error;
        retried.push('none');
        lastError = new PozyUnavailableError(`${route}: ${describeError(error)}`, true);
        continue;
      } finally {
        await this.budget.answered(grant);
      }
      this.count(route, result.status, started);
      span.setAttribute('http.response.status_code', result.status);
      this.budget.observe(result.headers, grant);
      if (expected.includes(result.status)) {
        // Too large, or not JSON: the same request gets the same answer, so no retry (a dead letter for a reconcile).
        if (result.tooLarge) {
          const limit = this.config.pozy.maxResponseBytes;
          throw new PozyProtocolError(
            `${route}: Pozy's answer (HTTP ${result.status}) is larger than POZY_MAX_RESPONSE_BYTES (${limit} bytes): it was cut off there, unread`,
            result.status,
          );
        }
        if (result.notJson) throw new PozyProtocolError(`${route}: Pozy answered HTTP ${result.status} with a body that is not JSON`, result.status);
        return { ...result, retried };
      }
      if (result.status === 429 || result.status >= 500) retried.push(String(result.status));
      if (result.status === 429) {
        const wait = rateLimitWait(result.headers, backoff(attempt + 1), this.config.pozy.maxPauseMs);
        // Every caller of every replica using this key waits, not just this one: the limit is the API key's.
        span.addEvent('rate_limited', { 'pozy_sync.retry_after_ms': wait.ms });
        await this.budget.pause(wait.ms, wait.adjusted ? `${wait.from}; ${wait.adjusted}` : wait.from);
        const inline = lane === 'realtime' || lane === 'operator' ? MAX_PAUSE_WAITED_IN_JOB_MS : MAX_INLINE_RETRY_AFTER_MS;
        if (wait.ms > inline || attempt === maxRetries) throw new PozyRateLimitedError(wait.ms);
        // The next take waits the pause out.
        lastError = undefined;
        continue;
      }
      if (result.status >= 500) {
        lastError = new PozyUnavailableError(`${route}: HTTP ${result.status}`, false);
        continue;
      }
      if (result.status === 401 || result.status === 403) this.keyRejected?.(result.status, route);
      throw new PozyProtocolError(`${route}: unexpected HTTP ${result.status} ${result.excerpt}`, result.status);
    }
    this.logger.warn(`${route} failed ${maxRetries + 1} times: ${lastError?.message}`);
    throw lastError ?? new PozyUnavailableError(`${route}: no answer`, true);
  }

  private async send(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, expected: number[], body?: object): Promise<Attempt> {
    const sentAt = new Date();
    const response = await this.pool.request({
      method,
      path: `${this.basePath}${path}`,
      headers: {
        authorization: `Bearer ${this.apiKey}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(this.tracing.enabled ? traceHeaders() : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(this.config.pozy.timeoutMs),
    });
    this.clock.observe(sentAt, new Date(), response.headers.date);
    const { statusCode: status, headers } = response;
    const attempt: Attempt = { status, headers, sentAt, body: undefined, excerpt: '', tooLarge: false, notJson: false, retried: [] };
    if (!expected.includes(status)) {
      const { bytes, complete } = await readUpTo(response.body, EXCERPT_BYTES);
      const text = new TextDecoder().decode(bytes).trim();
      return { ...attempt, excerpt: complete ? text : `${text} … [cut after ${EXCERPT_BYTES} bytes]` };
    }
    const limit = this.config.pozy.maxResponseBytes;
    const declared = integerHeader(headers['content-length']);
    if (declared !== undefined && declared > limit) {
      response.body.destroy();
      return { ...attempt, tooLarge: true };
    }
    const { bytes, complete } = await readUpTo(response.body, limit);
    if (!complete) return { ...attempt, tooLarge: true };
    const text = new TextDecoder().decode(bytes);
    try {
      return { ...attempt, body: text ? JSON.parse(text) : null };
    } catch {
      return { ...attempt, notJson: true };
    }
  }

  private count(route: string, status: number, started: number): void {
    const labels = { route, status: status === 0 ? 'none' : String(status) };
    this.metrics.pozyRequests.inc(labels);
    this.metrics.pozyRequestDuration.observe(labels, (performance.now() - started) / 1000);
  }
}

/** The DTOs read by the thousand, with their compiled checks (pozy-answer-check.ts). */
const COMPILED = new Map<ClassConstructor<object>, (value: object) => object | undefined>([
  [PozyPostDto, checkedPost],
  [PozyAccountDto, checkedAccount],
]);

function validated<T extends object>(cls: ClassConstructor<T>, value: unknown, what: string): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PozyProtocolError(`Pozy answered a ${what} that is not an object`);
  }
  // What the compiled check accepts, the DTO accepts as well: only the rest pays for class-validator, which is
  // most of a page's work otherwise, and it names what is wrong with it as it always has.
  const fast = COMPILED.get(cls)?.(value);
  if (fast) return fast as T;
  const dto = plainToInstance(cls, value);
  const errors = validateSync(dto);
  if (errors.length > 0) {
    const detail = errors.map((e) => `${e.property}: ${Object.values(e.constraints ?? {}).join(', ') || 'invalid'}`).join('; ');
    throw new PozyProtocolError(`Pozy answered a malformed ${what} (${detail})`);
  }
  return dto;
}

/**
 * At most `limit` bytes of a body. Past them the body is destroyed, and its connection with it, rather than read to
 * its end: `complete` is false then.
 */
async function readUpTo(body: Dispatcher.ResponseData['body'], limit: number): Promise<{ bytes: Buffer; complete: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    if (size + buffer.length > limit) {
      chunks.push(buffer.subarray(0, limit - size));
      body.destroy();
      return { bytes: Buffer.concat(chunks), complete: false };
    }
    chunks.push(buffer);
    size += buffer.length;
  }
  return { bytes: Buffer.concat(chunks), complete: true };
}

const backoff = (attempt: number) => fullJitterBackoff(attempt, BACKOFF_BASE_MS, BACKOFF_CAP_MS);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
