import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { ClassConstructor, plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { Pool } from 'undici';
import { describeError, fullJitterBackoff, isNetworkError, retryAfterMs } from '../common/http-retry';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { PozyAccountDto } from './dto/pozy-account.dto';
import { PozyPostDto } from './dto/pozy-post.dto';
import { PozyWebhookLogDto } from './dto/pozy-webhook-log.dto';
import { PozyProtocolError, PozyRateLimitedError, PozyUnavailableError } from './pozy-errors';
import { RateBudget } from './rate-budget';

/** A Retry-After longer than this is not waited out in the job: the job fails and retries after it instead. */
const MAX_INLINE_RETRY_AFTER_MS = 30_000;
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 5_000;

/** What Pozy answered, and when the request that got the answer was sent: the state is at least that recent. */
export type PostAnswer = ({ found: true; post: PozyPostDto } | { found: false }) & { sentAt: Date };
export interface AccountsAnswer {
  accounts: PozyAccountDto[];
  sentAt: Date;
}

export interface WebhookLogsPage {
  logs: PozyWebhookLogDto[];
  hasMore: boolean;
  total: number | undefined;
}

interface Attempt {
  status: number;
  body: unknown;
  retryAfterMs?: number;
  sentAt: Date;
}

/**
 * Pozy's API, as pozy-sync reads it: Bearer auth over a keep-alive pool, a timeout per request, retries of 429
 * (after Retry-After), 5xx, resets and timeouts with exponential backoff and full jitter, one rate budget for
 * the whole process, and answers validated before anything uses them.
 */
@Injectable()
export class PozyClient implements OnModuleDestroy {
  private readonly logger = new Logger(PozyClient.name);
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly budget: RateBudget;
  constructor(
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
  ) {
    const url = new URL(config.pozy.apiUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: 32,
      connectTimeout: config.pozy.timeoutMs,
      headersTimeout: config.pozy.timeoutMs,
      bodyTimeout: config.pozy.timeoutMs,
    });
    this.budget = new RateBudget(config.pozy.rateLimitPerMinute);
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.close();
  }

  /** `GET /v1/posts/{id}`; a 404 means the post is gone (or never was). */
  async getPost(postId: string): Promise<PostAnswer> {
    const { status, body, sentAt } = await this.get(`/v1/posts/${encodeURIComponent(postId)}`, 'GET /v1/posts/:id', [200, 404]);
    if (status === 404) return { found: false, sentAt };
    const post = validated(PozyPostDto, (body as { post?: unknown } | null)?.post, 'post');
    if (post._id !== postId) throw new PozyProtocolError(`Pozy answered post ${post._id} for ${postId}`);
    return { found: true, post, sentAt };
  }

  /**
   * `GET /v1/accounts?profileId=`: every account of the profile. `includeOverLimit`: Pozy leaves accounts over the
   * plan's limit out by default, and an account left out would be taken for a removed one.
   */
  async listAccounts(profileId: string): Promise<AccountsAnswer> {
    const answer = await this.accounts(`profileId=${encodeURIComponent(profileId)}&includeOverLimit=true`);
    const stranger = answer.accounts.find((account) => account.profileId !== profileId);
    if (stranger) throw new PozyProtocolError(`Pozy listed account ${stranger._id} of profile ${stranger.profileId} for ${profileId}`);
    return answer;
  }

  /** `GET /v1/accounts`: every account of every profile of the workspace (the full sweep). */
  listAllAccounts(): Promise<AccountsAnswer> {
    return this.accounts('includeOverLimit=true');
  }

  /** One page of `GET /v1/posts`, oldest created first, so that posts created meanwhile land on later pages. */
  async listPosts(page: number, limit: number): Promise<{ posts: PozyPostDto[]; pages: number; sentAt: Date }> {
    const { body, sentAt } = await this.get(`/v1/posts?page=${page}&limit=${limit}&sortBy=created-asc`, 'GET /v1/posts', [200]);
    const { posts, pagination } = (body ?? {}) as { posts?: unknown; pagination?: { pages?: unknown } };
    if (!Array.isArray(posts)) throw new PozyProtocolError('Pozy answered posts without a `posts` array');
    return {
      posts: posts.map((post, i) => validated(PozyPostDto, post, `posts[${i}]`)),
      pages: typeof pagination?.pages === 'number' ? pagination.pages : page,
      sentAt,
    };
  }

  private async accounts(query: string): Promise<AccountsAnswer> {
    const { body, sentAt } = await this.get(`/v1/accounts?${query}`, 'GET /v1/accounts', [200]);
    const list = (body as { accounts?: unknown } | null)?.accounts;
    if (!Array.isArray(list)) throw new PozyProtocolError('Pozy answered accounts without an `accounts` array');
    return { accounts: list.map((account, i) => validated(PozyAccountDto, account, `accounts[${i}]`)), sentAt };
  }

  /** One page of `GET /v1/webhooks/logs`, newest first (`skip` at most 10,000, `limit` at most 100). */
  async listWebhookLogs(query: { limit: number; skip: number; event?: string }): Promise<WebhookLogsPage> {
    const params = new URLSearchParams({ limit: String(query.limit), skip: String(query.skip) });
    if (query.event) params.set('event', query.event);
    const { body } = await this.get(`/v1/webhooks/logs?${params.toString()}`, 'GET /v1/webhooks/logs', [200]);
    const { logs, pagination } = (body ?? {}) as { logs?: unknown; pagination?: { hasMore?: unknown; total?: unknown } };
    if (!Array.isArray(logs)) throw new PozyProtocolError('Pozy answered webhook logs without a `logs` array');
    return {
      logs: logs.map((row, i) => validated(PozyWebhookLogDto, row, `logs[${i}]`)),
      hasMore: pagination?.hasMore === true,
      total: typeof pagination?.total === 'number' ? pagination.total : undefined,
    };
  }

  private async get(path: string, route: string, expected: number[]): Promise<Attempt> {
    const { maxRetries } = this.config.pozy;
    let lastError: PozyUnavailableError | undefined;
    for (let attempt = 0; attempt <= maxRetries; attempt += 1) {
      if (attempt > 0) await sleep(lastError ? backoff(attempt) : 0);
      await this.budget.take();
      let result: Attempt;
      try {
        result = await this.send(path);
      } catch (error) {
        this.count(route, 0);
        if (!isNetworkError(error)) throw error;
        lastError = new PozyUnavailableError(`${route}: ${describeError(error)}`, true);
        continue;
      }
      this.count(route, result.status);
      if (expected.includes(result.status)) return result;
      if (result.status === 429) {
        const wait = result.retryAfterMs ?? backoff(attempt + 1);
        // Every caller in this process waits, not just this one: the limit is the workspace's.
        this.budget.holdFor(wait);
        if (wait > MAX_INLINE_RETRY_AFTER_MS || attempt === maxRetries) throw new PozyRateLimitedError(wait);
        await sleep(wait);
        lastError = undefined;
        continue;
      }
      if (result.status >= 500) {
        lastError = new PozyUnavailableError(`${route}: HTTP ${result.status}`, false);
        continue;
      }
      throw new PozyProtocolError(`${route}: unexpected HTTP ${result.status} ${JSON.stringify(result.body)}`, result.status);
    }
    this.logger.warn(`${route} failed ${maxRetries + 1} times: ${lastError?.message}`);
    throw lastError ?? new PozyUnavailableError(`${route}: no answer`, true);
  }

  private async send(path: string): Promise<Attempt> {
    const sentAt = new Date();
    const response = await this.pool.request({
      method: 'GET',
      path: `${this.basePath}${path}`,
      headers: { authorization: `Bearer ${this.config.pozy.apiKey}`, accept: 'application/json' },
      signal: AbortSignal.timeout(this.config.pozy.timeoutMs),
    });
    const text = await response.body.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      if (response.statusCode < 500) throw new PozyProtocolError(`Pozy answered HTTP ${response.statusCode} with a body that is not JSON`, response.statusCode);
      body = text;
    }
    return { status: response.statusCode, body, retryAfterMs: retryAfterMs(response.headers), sentAt };
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

const backoff = (attempt: number) => fullJitterBackoff(attempt, BACKOFF_BASE_MS, BACKOFF_CAP_MS);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
