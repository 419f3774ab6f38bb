import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { IssuedReadTokens, IssuedToken, TOKENS_STALE_AFTER_MS } from '../common/read-access';
import { WorkspaceScope } from '../common/read-scope';
import { AppConfig } from '../config/app-config';
import { LiveReadToken, ReadTokenFingerprint, ReadTokenRepository } from './read-token.repository';
import { tokenDigest } from './read-token-secret';

/** Every replica reads the table's counts this often: a token made or deleted on another is honoured or refused here within about this. */
const POLL_MS = 1_000;
/** A token's last_used_at is written at most this often (the statement itself also holds every replica to it). */
const RECORD_USE_EVERY_MS = 60_000;

/**
 * The live tokens made with `POST /admin/tokens`, kept in memory by their hashes on every replica that serves reads,
 * so the read guards (common/read-access.ts) check one with no database statement. A poll of the table's counts
 * (ReadTokenRepository.fingerprint) every second tells when to read the tokens again. No LISTEN here: the feed's
 * listener (changes/) carries only its own channel, and a second connection per replica for a rare change costs more
 * than a one-row aggregate a second.
 */
@Injectable()
export class ReadTokenRegistry extends IssuedReadTokens implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ReadTokenRegistry.name);
  private byHash: ReadonlyMap<string, IssuedToken> = new Map();
  /** The counts the copy was read at; undefined until the first read. */
  private known: ReadTokenFingerprint | undefined;
  /** When the last read that succeeded began: the copy holds every change committed before then. */
  private confirmedAt = -Infinity;
  /** Reads and this replica's own changes, one at a time, in order: an older read never lands after a newer one. */
  private queue: Promise<void> = Promise.resolve();
  private ticking: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private failing = false;
  private staleSaid = false;
  private recordingFails = false;
  /** When each live token's use was last written (by any replica, as far as this one has read). */
  private readonly useRecordedAt = new Map<string, number>();
  private readonly useToRecord = new Set<string>();

  constructor(
    private readonly config: AppConfig,
    private readonly tokens: ReadTokenRepository,
  ) {
    super();
  }

  async onApplicationBootstrap(): Promise<void> {
    // ROLE=worker serves no reads.
    if (!this.config.servesHttp) return;
    this.stopped = false;
    // Before the service listens, so no request meets an empty copy; a failure stops the start, as a migration's does.
    await this.refresh();
    this.schedule();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    await this.queue;
  }

  get anyLive(): boolean {
    return this.byHash.size > 0;
  }

  match(presented: string): IssuedToken | undefined {
    if (Date.now() - this.confirmedAt > TOKENS_STALE_AFTER_MS) {
      throw new ApiError(
        'tokens_unavailable',
        'The tokens made with POST /admin/tokens could not be read from the database lately, so none is trusted; retry shortly',
        undefined,
        2,
      );
    }
    // A Map lookup of the digest, no constant-time comparison: its time depends on the digest of what the client sent,
    // which the client can compute, and at most on how many leading bytes of a stored digest it shares. Stored digests
    // are no secret worth the trouble (a SHA-256 preimage of a 256-bit token is out of reach), and the token itself
    // never meets a comparison.
    const token = this.byHash.get(tokenDigest(presented));
    if (token !== undefined && Date.now() - (this.useRecordedAt.get(token.id) ?? -Infinity) >= RECORD_USE_EVERY_MS) {
      this.useToRecord.add(token.id);
    }
    return token;
  }

  /** Reads the table now, after whatever is in flight. */
  refresh(): Promise<void> {
    return this.serialised(() => this.read());
  }

  /**
   * After this replica made or deleted a token: the change holds here before the request is answered, even if the
   * read that confirms it fails (the poll reads again).
   */
  changed(change: { created: LiveReadToken } | { deleted: string }): Promise<void> {
    return this.serialised(async () => {
      const wasLive = this.anyLive;
      const byHash = new Map(this.byHash);
      if ('created' in change) byHash.set(change.created.tokenHash, issued(change.created));
      else for (const [hash, token] of byHash) if (token.id === change.deleted) byHash.delete(hash);
      this.byHash = byHash;
      this.sayIfReadsChanged(wasLive);
      try {
        await this.read();
      } catch (error) {
        this.failed(error);
      }
    });
  }

  private serialised(work: () => Promise<void>): Promise<void> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async read(): Promise<void> {
    const began = Date.now();
    const counts = await this.tokens.fingerprint();
    // Counts first, then the rows: the rows are at least as new as the counts kept with them.
    if (this.known === undefined || counts.total !== this.known.total || counts.deleted !== this.known.deleted) {
      this.replace(await this.tokens.live());
      this.known = counts;
    }
    this.confirmedAt = began;
    if (this.failing) {
      this.failing = false;
      this.staleSaid = false;
      this.logger.log('Reading the tokens made with POST /admin/tokens again');
    }
  }

  private replace(rows: LiveReadToken[]): void {
    const first = this.known === undefined;
    const wasLive = this.anyLive;
    this.byHash = new Map(rows.map((row) => [row.tokenHash, issued(row)]));
    const live = new Set(rows.map((row) => row.id));
    for (const row of rows) {
      const written = row.lastUsedAt?.getTime() ?? -Infinity;
      if (written > (this.useRecordedAt.get(row.id) ?? -Infinity)) this.useRecordedAt.set(row.id, written);
    }
    for (const id of this.useRecordedAt.keys()) if (!live.has(id)) this.useRecordedAt.delete(id);
    for (const id of this.useToRecord) if (!live.has(id)) this.useToRecord.delete(id);
    if (first && this.anyLive && this.config.readTokens.length === 0) {
      this.logger.log(`${rows.length} token(s) made with POST /admin/tokens are live: the query endpoints need a token, API_TOKENS unset or not`);
    } else if (!first) {
      this.sayIfReadsChanged(wasLive);
    }
  }

  /** Without API_TOKENS, the first live token closes the reads and the last one's deletion opens them: said each time. */
  private sayIfReadsChanged(wasLive: boolean): void {
    if (this.config.readTokens.length > 0 || wasLive === this.anyLive) return;
    const setting = this.config.openReadsChosen ? 'API_TOKENS=none' : 'API_TOKENS is not set';
    if (this.anyLive) {
      this.logger.log(`${setting}, and a token made with POST /admin/tokens is live: the query endpoints and the full status now need a token`);
    } else {
      this.logger.warn(
        `${setting}, and no token made with POST /admin/tokens is live any more: the query endpoints and the full status are open to anyone again`,
      );
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = undefined;
        this.schedule();
      });
    }, POLL_MS);
  }

  private async tick(): Promise<void> {
    try {
      await this.refresh();
    } catch (error) {
      this.failed(error);
      return;
    }
    try {
      await this.recordUse();
      this.recordingFails = false;
    } catch (error) {
      // Kept, and tried again next second; said once while it keeps failing.
      if (!this.recordingFails)
        this.logger.warn(`Recording when tokens were last used failed: ${error instanceof Error ? error.message : String(error)}`);
      this.recordingFails = true;
    }
  }

  /** One statement for every token used since its use was last written, a minute ago or more. */
  private async recordUse(): Promise<void> {
    if (this.useToRecord.size === 0) return;
    const ids = [...this.useToRecord];
    const before = ids.map((id) => this.useRecordedAt.get(id));
    const at = Date.now();
    this.useToRecord.clear();
    for (const id of ids) this.useRecordedAt.set(id, at);
    try {
      await this.tokens.touch(ids);
    } catch (error) {
      ids.forEach((id, i) => {
        const earlier = before[i];
        if (earlier === undefined) this.useRecordedAt.delete(id);
        else this.useRecordedAt.set(id, earlier);
        this.useToRecord.add(id);
      });
      throw error;
    }
  }

  /** Said once when the reads start failing, once more when the copy is too old to trust, and once when they work again. */
  private failed(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    if (!this.failing) {
      this.failing = true;
      this.logger.warn(`Reading the tokens made with POST /admin/tokens failed (${message}); retrying every second`);
    }
    if (!this.staleSaid && Date.now() - this.confirmedAt > TOKENS_STALE_AFTER_MS) {
      this.staleSaid = true;
      this.logger.warn(
        `The tokens made with POST /admin/tokens were last read over ${TOKENS_STALE_AFTER_MS / 1000} s ago: they are answered 503 tokens_unavailable until a read succeeds; API_TOKENS and ADMIN_TOKEN still read`,
      );
    }
  }
}

const issued = (row: LiveReadToken): IssuedToken =>
  Object.freeze({
    id: row.id,
    scope: WorkspaceScope.of(row.workspaces),
    ...(row.consumers ? { consumers: Object.freeze([...row.consumers]) } : {}),
  });
