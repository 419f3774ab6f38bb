import { Logger } from '@nestjs/common';
import { ClassConstructor, plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { Dispatcher } from 'undici';
import { describeError, fullJitterBackoff, isNetworkError } from '../common/http-retry';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { Lane } from './budget/budget-policy';
import { PozyBudget } from './budget/pozy-budget.service';
import { PozyClock } from './pozy-clock.service';
import { PozyAccountDto } from './dto/pozy-account.dto';
import { PozyPostDto } from './dto/pozy-post.dto';
import { PozyWebhookLogDto } from './dto/pozy-webhook-log.dto';
import { PozyProtocolError, PozyRateLimitedError, PozyUnavailableError } from './pozy-errors';
import { integerHeader, rateLimitWait } from './rate-limit-headers';

/** A Retry-After longer than this is not waited out in the job: the job fails and retries after it instead. */
const MAX_INLINE_RETRY_AFTER_MS = 30_000;
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 5_000;
/** What an error quotes of an answer the client does not use (a 429, a 5xx, another 4xx): the rest is never read. */
const EXCERPT_BYTES = 1_024;

/** What Pozy answered, and when the request that got the answer was sent: the state is at least that recent. */
export type PostAnswer = ({ found: true; post: PozyPostDto } | { found: false }) & { sentAt: Date };
export interface AccountsAnswer {
  accounts: PozyAccountDto[];
  sentAt: Date;
}

/** One page of `GET /v1/posts`, oldest created first. */
export interface PostsPage {
  posts: PozyPostDto[];
  /** Posts Pozy says the whole list holds now, when it says. */
  total: number | undefined;
  sentAt: Date;
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

  constructor(parts: PozyClientParts) {
    this.pool = parts.pool;
    this.basePath = parts.basePath;
    this.apiKey = parts.apiKey;
    this.budget = parts.budget;
    this.clock = parts.clock;
    this.metrics = parts.metrics;
    this.config = parts.config;
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
    const { status, body, sentAt } = await this.get(path, 'GET /v1/posts/:id', [200, 404], lane, options.once ? 0 : undefined);
    if (status === 404) return { found: false, sentAt };
    const post = validated(PozyPostDto, (body as { post?: unknown } | null)?.post, 'post');
    if (post._id !== postId) throw new PozyProtocolError(`Pozy answered post ${post._id} for ${postId}`);
    return { found: true, post, sentAt };
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
    const { body, sentAt } = await this.get(`/v1/accounts?${query}`, 'GET /v1/accounts', [200], lane);
    const list = (body as { accounts?: unknown } | null)?.accounts;
    if (!Array.isArray(list)) throw new PozyProtocolError('Pozy answered accounts without an `accounts` array');
    return { accounts: list.map((account, i) => validated(PozyAccountDto, account, `accounts[${i}]`)), sentAt };
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

  private async get(path: string, route: string, expected: number[], lane: Lane, maxRetries = this.config.pozy.maxRetries): Promise<Attempt> {
    let lastError: PozyUnavailableError | undefined;
    for (let attempt = 0; attempt <= maxRetries; attempt += 1) {
      if (attempt > 0 && lastError) await sleep(backoff(attempt));
      const grant = await this.budget.take(lane);
      let result: Attempt;
      try {
        result = await this.send(path, expected);
      } catch (error) {
        this.count(route, 0);
        if (!isNetworkError(error)) throw error;
        lastError = new PozyUnavailableError(`${route}: ${describeError(error)}`, true);
        continue;
      } finally {
        await this.budget.answered(grant);
      }
      this.count(route, result.status);
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
        return result;
      }
      if (result.status === 429) {
        const wait = rateLimitWait(result.headers, backoff(attempt + 1), this.config.pozy.maxPauseMs);
        // Every caller of every replica using this key waits, not just this one: the limit is the API key's.
        await this.budget.pause(wait.ms, wait.adjusted ? `${wait.from}; ${wait.adjusted}` : wait.from);
        if (wait.ms > MAX_INLINE_RETRY_AFTER_MS || attempt === maxRetries) throw new PozyRateLimitedError(wait.ms);
        // The next take waits the pause out.
        lastError = undefined;
        continue;
      }
      if (result.status >= 500) {
        lastError = new PozyUnavailableError(`${route}: HTTP ${result.status}`, false);
        continue;
      }
      throw new PozyProtocolError(`${route}: unexpected HTTP ${result.status} ${result.excerpt}`, result.status);
    }
    this.logger.warn(`${route} failed ${maxRetries + 1} times: ${lastError?.message}`);
    throw lastError ?? new PozyUnavailableError(`${route}: no answer`, true);
  }

  private async send(path: string, expected: number[]): Promise<Attempt> {
    const sentAt = new Date();
    const response = await this.pool.request({
      method: 'GET',
      path: `${this.basePath}${path}`,
      headers: { authorization: `Bearer ${this.apiKey}`, accept: 'application/json' },
      signal: AbortSignal.timeout(this.config.pozy.timeoutMs),
    });
    this.clock.observe(sentAt, new Date(), response.headers.date);
    const { statusCode: status, headers } = response;
    const attempt: Attempt = { status, headers, sentAt, body: undefined, excerpt: '', tooLarge: false, notJson: false };
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

  private count(route: string, status: number): void {
    this.metrics.pozyRequests.inc({ route, status: status === 0 ? 'none' : String(status) });
  }
}

function validated<T extends object>(cls: ClassConstructor<T>, value: unknown, what: string): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PozyProtocolError(`Pozy answered a ${what} that is not an object`);
  }
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
