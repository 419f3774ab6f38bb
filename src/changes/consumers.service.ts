import { Injectable, Logger } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { WorkspaceScope } from '../common/read-scope';
import { AppConfig } from '../config/app-config';
import { DatabaseService, Db } from '../database/database.service';
import { MetricsService } from '../metrics/metrics.service';
import { OpsEvents } from '../notifications/ops-events.service';
import { ChangeFilter, ChangeRepository } from './change.repository';
import { oldestAvailable } from './change-cursor';
import { ChangePage, cursorExpired } from './change-window';
import { ChangesService } from './changes.service';
import { ConsumerDefinition, ConsumerPartitionState, ConsumerRepository, StoredConsumer } from './consumer.repository';
import { CommitConsumerDto, CONSUMER_NAME, CreateConsumerDto } from './dto/consumer.dto';
import { DEFAULT_CHANGE_LIMIT, ListChangesQuery } from './dto/list-changes.query';

const DAY_MS = 86_400_000;
const DEFAULT_LIMIT = 100;
/** A partition's read is recorded (last_read_at) at most this often per replica; the statement also holds every replica to a second. */
const RECORD_READ_EVERY_MS = 1_000;
/** /metrics exports the lag of this many consumers at most, the most lagging: one series each, however many there are. */
export const LAG_SERIES = 20;

export type ConsumerStatus = 'active' | 'expired';

export interface ConsumerLag {
  /** Positions between the committed one and the head: an upper bound of the entries still to read (others' too). */
  entries: number;
  /** How old the oldest entry not committed is; 0 when caught up. */
  seconds: number;
}

export interface ConsumerPartitionView {
  partition: number;
  cursor: string;
  lag: ConsumerLag;
  committedAt: Date | null;
  lastReadAt: Date | null;
  status: ConsumerStatus;
  expiredAt: Date | null;
}

export interface ConsumerView {
  name: string;
  types: string[] | null;
  workspaces: string[] | '*';
  profileIds: string[] | null;
  platforms: string[] | null;
  partitions: number;
  createdAt: Date;
  /** `expired` when any partition is. */
  status: ConsumerStatus;
  /** The feed's head when this was answered. */
  head: string;
  /** The largest of the partitions' lags. */
  lag: ConsumerLag;
  /** By partition, 0 first. */
  positions: ConsumerPartitionView[];
}

/** GET /changes?consumer=: a page, and whose. */
export interface ConsumerPage extends ChangePage {
  consumer: string;
  partition: number;
  partitions: number;
  /** When the partition was last committed; null before its first commit (a client reads the mirror whole then). */
  committedAt: string | null;
}

export interface CommitAnswer extends ConsumerPartitionView {
  consumer: string;
}

const invalid = (field: string, problem: string) =>
  new ApiError('invalid_request', `Invalid request: ${field}: ${problem}`, [{ field, problems: [problem] }]);

const notFound = (name: string) => new ApiError('not_found', `No consumer ${name}`);

/**
 * Named consumers of the change feed: the server keeps each partition's committed position, reads from it
 * (GET /changes?consumer=), moves it on commit (POST /changes/commit), holds retention for it up to
 * CONSUMER_MAX_LAG_DAYS and expires it past that, and exports the most lagging consumers' lag.
 */
@Injectable()
export class ConsumersService {
  private readonly logger = new Logger(ConsumersService.name);
  /** When this replica last recorded each partition's read (`name/partition`). */
  private readonly readRecordedAt = new Map<string, number>();
  private readonly expirations;

  constructor(
    private readonly consumers: ConsumerRepository,
    private readonly changes: ChangeRepository,
    private readonly feed: ChangesService,
    private readonly database: DatabaseService,
    private readonly config: AppConfig,
    private readonly ops: OpsEvents,
    metrics: MetricsService,
  ) {
    this.expirations = metrics.counter({
      name: 'pozy_sync_consumer_expirations_total',
      help: 'Partitions of named consumers expired by retention: their position fell CONSUMER_MAX_LAG_DAYS behind',
    });
    metrics.publishGauges(
      {
        entries: {
          name: 'pozy_sync_consumer_lag_entries',
          help: `Feed positions between a named consumer's lowest committed position and the head (the ${LAG_SERIES} most lagging active consumers)`,
          labelNames: ['consumer'],
        },
        seconds: {
          name: 'pozy_sync_consumer_lag_seconds',
          help: `Age of the oldest change a named consumer has not committed; 0 when caught up (the ${LAG_SERIES} most lagging active consumers)`,
          labelNames: ['consumer'],
        },
        consumers: {
          name: 'pozy_sync_consumers',
          help: 'Named consumers, by status (expired: a partition fell CONSUMER_MAX_LAG_DAYS behind)',
          labelNames: ['status'],
        },
      },
      async (gauges) => {
        const lags = await this.lagOfMostLagging(LAG_SERIES);
        gauges.entries.reset();
        gauges.seconds.reset();
        for (const lag of lags.top) {
          gauges.entries.set({ consumer: lag.name }, lag.entries);
          gauges.seconds.set({ consumer: lag.name }, lag.seconds);
        }
        gauges.consumers.set({ status: 'active' }, lags.active);
        gauges.consumers.set({ status: 'expired' }, lags.expired);
      },
    );
  }

  /** A new consumer starts at the feed's head: it sees the changes from its creation on (read the mirror whole first). */
  async create(body: CreateConsumerDto): Promise<ConsumerView> {
    const definition: ConsumerDefinition = {
      name: body.name,
      types: body.types ?? [],
      workspaces: body.workspaces ?? [],
      profileIds: body.profileIds ?? [],
      platforms: body.platforms ?? [],
      partitions: body.partitions ?? 1,
    };
    const { newest } = await this.changes.bounds(this.database.db);
    const created = await this.consumers.create(definition, newest ?? '0');
    if (!created) throw new ApiError('consumer_exists', `A consumer named ${body.name} exists already`);
    this.logger.log(`Consumer ${created.name} made (${created.partitions} partition(s), from position ${newest ?? '0'})`);
    return (await this.views([created]))[0];
  }

  async list(limit = DEFAULT_LIMIT, cursor?: string): Promise<{ data: ConsumerView[]; nextCursor: string | null }> {
    const rows = await this.consumers.list(limit + 1, decodeCursor(cursor));
    const data = rows.slice(0, limit);
    return { data: await this.views(data), nextCursor: rows.length > limit ? Buffer.from(data[data.length - 1].name).toString('base64url') : null };
  }

  async get(name: string): Promise<ConsumerView> {
    const consumer = await this.consumers.find(name);
    if (!consumer) throw notFound(name);
    return (await this.views([consumer]))[0];
  }

  async delete(name: string): Promise<void> {
    if (!(await this.consumers.delete(name))) throw notFound(name);
    for (const key of this.readRecordedAt.keys()) if (key.startsWith(`${name}/`)) this.readRecordedAt.delete(key);
    this.logger.log(`Consumer ${name} deleted`);
  }

  /** GET /changes?consumer=: from the partition's committed position, with the consumer's filters; `db` reads the feed. */
  async read(query: ListChangesQuery, db: Db, scope: WorkspaceScope, allowed: readonly string[] | undefined): Promise<ConsumerPage> {
    for (const field of ['after', 'types', 'profileId', 'platform', 'workspace'] as const) {
      if (query[field] !== undefined)
        throw invalid(field, `${field} is not allowed with consumer: the consumer reads from its committed position with its own filters`);
    }
    const name = query.consumer!;
    const consumer = await this.readable(name, scope, allowed);
    const partition = partitionAsked(consumer, query.partition);
    const state = consumer.partitionStates[partition];
    if (state.expiredAt !== null) throw await this.expired(consumer, state);
    this.recordRead(name, partition);
    const page = await this.feed.follow(db, state.cursor, query.limit ?? DEFAULT_CHANGE_LIMIT, query.wait ?? 0, filterOf(consumer, partition));
    return { ...page, consumer: name, partition, partitions: consumer.partitions, committedAt: state.committedAt?.toISOString() ?? null };
  }

  /**
   * POST /changes/commit: moves the partition's committed position to `cursor`. Refuses a cursor past the head (400
   * `cursor_beyond_head`) and one before the committed position (409 `cursor_behind_committed`); the same one again
   * answers as the first time. An expired partition is active again at any cursor still kept (else 410).
   */
  async commit(body: CommitConsumerDto, scope: WorkspaceScope, allowed: readonly string[] | undefined): Promise<CommitAnswer> {
    const consumer = await this.readable(body.consumer, scope, allowed);
    const partition = partitionAsked(consumer, body.partition);
    const { oldest, newest } = await this.changes.bounds(this.database.db);
    const head = newest ?? '0';
    if (BigInt(body.cursor) > BigInt(head)) {
      throw new ApiError('cursor_beyond_head', `Cursor ${body.cursor} is beyond the feed's head ${head}: commit a cursor GET /changes answered`, {
        head,
      });
    }
    const before = consumer.partitionStates[partition];
    const oldestCursor = oldestAvailable(oldest) ?? '0';
    if (before.expiredAt !== null && BigInt(body.cursor) < BigInt(oldestCursor)) {
      throw cursorExpired(`Cursor ${body.cursor} is older than the changes kept, so consumer ${consumer.name} cannot resume from it`, oldestCursor);
    }
    const outcome = await this.consumers.commit(consumer.name, partition, body.cursor);
    if (outcome.kind === 'not_found') throw notFound(consumer.name);
    if (outcome.kind === 'behind') {
      throw new ApiError(
        'cursor_behind_committed',
        `Cursor ${body.cursor} is before partition ${partition}'s committed position ${outcome.state.cursor}: a commit never moves back`,
        { committed: outcome.state.cursor },
      );
    }
    if (before.expiredAt !== null) this.logger.log(`Consumer ${consumer.name} partition ${partition} active again at ${body.cursor}`);
    const [view] = this.partitionViews([outcome.state], head, await this.changedAtAfter([outcome.state.cursor], oldest), Date.now());
    return { consumer: consumer.name, ...view };
  }

  /**
   * Before retention prunes the feed: expires the active partitions whose oldest entry not committed is older than
   * CONSUMER_MAX_LAG_DAYS (telling ops.consumer.expired), and answers the lowest position of those still active,
   * after which every entry is kept (null: none holds anything).
   */
  async holdForRetention(now: Date): Promise<string | null> {
    const active = await this.consumers.activePartitions();
    if (active.length === 0) return null;
    const { oldest, newest } = await this.changes.bounds(this.database.db);
    if (newest === null) return null;
    const limit = now.getTime() - this.config.retention.consumerMaxLagDays * DAY_MS;
    const oldestCursor = BigInt(oldestAvailable(oldest) ?? '0');
    const changedAt = await this.changes.changedAt(active.map((p) => (BigInt(p.cursor) + 1n).toString()));
    const stale = active.filter((p) => {
      if (BigInt(p.cursor) >= BigInt(newest)) return false;
      const next = changedAt.get((BigInt(p.cursor) + 1n).toString());
      return next === undefined ? BigInt(p.cursor) < oldestCursor : next.getTime() < limit;
    });
    const marked = await this.consumers.expire(stale);
    await this.tellExpired(marked, active, changedAt);
    const expiredKeys = new Set(marked.map((p) => `${p.name}/${p.partition}`));
    let lowest: bigint | null = null;
    for (const p of active) {
      if (expiredKeys.has(`${p.name}/${p.partition}`)) continue;
      const cursor = BigInt(p.cursor);
      if (lowest === null || cursor < lowest) lowest = cursor;
    }
    return lowest === null ? null : lowest.toString();
  }

  private async tellExpired(
    marked: { name: string; partition: number; cursor: string }[],
    active: { name: string; workspaces: string[] }[],
    changedAt: Map<string, Date>,
  ): Promise<void> {
    if (marked.length === 0) return;
    this.expirations.inc(marked.length);
    const byName = new Map<string, { partition: number; cursor: string; oldestUncommittedAt: string | null }[]>();
    for (const p of marked) {
      const list = byName.get(p.name) ?? [];
      list.push({
        partition: p.partition,
        cursor: p.cursor,
        oldestUncommittedAt: changedAt.get((BigInt(p.cursor) + 1n).toString())?.toISOString() ?? null,
      });
      byName.set(p.name, list);
    }
    for (const [name, partitions] of byName) {
      const workspaces = active.find((p) => p.name === name)?.workspaces ?? [];
      this.logger.warn(
        `Consumer ${name} expired (partition ${partitions.map((p) => p.partition).join(', ')}): it fell ${this.config.retention.consumerMaxLagDays} days ` +
          '(CONSUMER_MAX_LAG_DAYS) behind; its next read answers 410 until it commits a cursor still kept',
      );
      await this.ops.emit({
        type: 'ops.consumer.expired',
        key: `consumer.expired:${name}:${partitions.map((p) => `${p.partition}@${p.cursor}`).join(',')}`,
        workspaceId: workspaces.length === 1 ? workspaces[0] : null,
        data: { consumer: name, partitions, maxLagDays: this.config.retention.consumerMaxLagDays },
      });
    }
  }

  /** The consumer, if the reader may read it: a token for some consumers reads only those, one for some workspaces only consumers within them. */
  private async readable(name: string, scope: WorkspaceScope, allowed: readonly string[] | undefined): Promise<StoredConsumer> {
    if (allowed !== undefined && !allowed.includes(name)) {
      throw new ApiError('consumer_not_allowed', `This token reads only the consumers ${allowed.join(', ')}, not ${name}`);
    }
    const consumer = await this.consumers.find(name);
    // One outside the reader's workspaces is answered as one that does not exist.
    if (!consumer || !withinScope(consumer, scope)) throw notFound(name);
    return consumer;
  }

  private async expired(consumer: StoredConsumer, state: ConsumerPartitionState): Promise<ApiError> {
    const { oldest } = await this.changes.bounds(this.database.db);
    return cursorExpired(
      `Consumer ${consumer.name} partition ${state.partition} expired at ${state.expiredAt!.toISOString()}: its position ${state.cursor} fell ` +
        `CONSUMER_MAX_LAG_DAYS behind. Commit the head cursor once resynchronised to resume`,
      oldestAvailable(oldest) ?? '0',
    );
  }

  /** Records a read, at most once a second per partition on this replica, never holding the read up. */
  private recordRead(name: string, partition: number): void {
    const key = `${name}/${partition}`;
    const now = Date.now();
    if (now - (this.readRecordedAt.get(key) ?? 0) < RECORD_READ_EVERY_MS) return;
    this.readRecordedAt.set(key, now);
    this.consumers
      .touch(name, partition)
      .catch((error: unknown) => this.logger.warn(`Could not record a read of ${key}: ${(error as Error).message}`));
  }

  private async views(consumers: StoredConsumer[]): Promise<ConsumerView[]> {
    const { oldest, newest } = await this.changes.bounds(this.database.db);
    const head = newest ?? '0';
    const changedAt = await this.changedAtAfter(
      consumers.flatMap((c) => c.partitionStates.map((p) => p.cursor)),
      oldest,
    );
    const now = Date.now();
    return consumers.map((consumer) => {
      const positions = this.partitionViews(consumer.partitionStates, head, changedAt, now);
      return {
        name: consumer.name,
        types: consumer.types.length > 0 ? consumer.types : null,
        workspaces: consumer.workspaces.length > 0 ? consumer.workspaces : '*',
        profileIds: consumer.profileIds.length > 0 ? consumer.profileIds : null,
        platforms: consumer.platforms.length > 0 ? consumer.platforms : null,
        partitions: consumer.partitions,
        createdAt: consumer.createdAt,
        status: positions.some((p) => p.status === 'expired') ? 'expired' : 'active',
        head,
        lag: {
          entries: Math.max(0, ...positions.map((p) => p.lag.entries)),
          seconds: Math.max(0, ...positions.map((p) => p.lag.seconds)),
        },
        positions,
      };
    });
  }

  /**
   * When the entry after each cursor changed (its oldest not committed), by cursor; a cursor whose next entry was
   * pruned gets the oldest kept entry's.
   */
  private async changedAtAfter(cursors: readonly string[], oldest: string | null): Promise<Map<string, Date>> {
    const next = cursors.map((cursor) => (BigInt(cursor) + 1n).toString());
    const found = await this.changes.changedAt(oldest === null ? next : [...next, oldest]);
    const byCursor = new Map<string, Date>();
    for (const cursor of cursors) {
      const at = found.get((BigInt(cursor) + 1n).toString()) ?? (oldest !== null && BigInt(cursor) < BigInt(oldest) ? found.get(oldest) : undefined);
      if (at) byCursor.set(cursor, at);
    }
    return byCursor;
  }

  private partitionViews(
    states: readonly ConsumerPartitionState[],
    head: string,
    changedAt: Map<string, Date>,
    now: number,
  ): ConsumerPartitionView[] {
    return states.map((state) => {
      const behind = BigInt(head) - BigInt(state.cursor);
      const at = behind > 0n ? changedAt.get(state.cursor) : undefined;
      return {
        partition: state.partition,
        cursor: state.cursor,
        lag: { entries: behind > 0n ? Number(behind) : 0, seconds: at ? Math.max(0, (now - at.getTime()) / 1000) : 0 },
        committedAt: state.committedAt,
        lastReadAt: state.lastReadAt,
        status: state.expiredAt === null ? 'active' : 'expired',
        expiredAt: state.expiredAt,
      };
    });
  }

  /** For /metrics: the `count` active consumers furthest behind (by entries), with the age of what they have not committed, and the counts by status. */
  private async lagOfMostLagging(
    count: number,
  ): Promise<{ top: { name: string; entries: number; seconds: number }[]; active: number; expired: number }> {
    const positions = await this.consumers.positions();
    const expired = positions.filter((p) => p.expired).length;
    const active = positions.length - expired;
    const { oldest, newest } = await this.changes.bounds(this.database.db);
    const head = BigInt(newest ?? '0');
    const lagging = positions
      .filter((p): p is { name: string; cursor: string; expired: boolean } => !p.expired && p.cursor !== null)
      .sort((a, b) => (BigInt(a.cursor) < BigInt(b.cursor) ? -1 : BigInt(a.cursor) > BigInt(b.cursor) ? 1 : a.name < b.name ? -1 : 1))
      .slice(0, count);
    const changedAt = await this.changedAtAfter(
      lagging.map((p) => p.cursor),
      oldest,
    );
    const now = Date.now();
    const top = lagging.map((p) => {
      const behind = head - BigInt(p.cursor);
      const at = behind > 0n ? changedAt.get(p.cursor) : undefined;
      return { name: p.name, entries: behind > 0n ? Number(behind) : 0, seconds: at ? Math.max(0, (now - at.getTime()) / 1000) : 0 };
    });
    return { top, active, expired };
  }
}

function decodeCursor(cursor: string | undefined): string | null {
  if (cursor === undefined) return null;
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  if (CONSUMER_NAME.test(name) && Buffer.from(name).toString('base64url') === cursor) return name;
  throw invalid('cursor', 'cursor is not one this service returned (use nextCursor as given)');
}

/** A consumer for some workspaces is read by readers of all of them; one for every workspace by readers of every workspace. */
function withinScope(consumer: StoredConsumer, scope: WorkspaceScope): boolean {
  if (scope.all) return true;
  return consumer.workspaces.length > 0 && consumer.workspaces.every((workspace) => scope.allows(workspace));
}

function partitionAsked(consumer: StoredConsumer, partition: number | undefined): number {
  if (partition === undefined) {
    if (consumer.partitions > 1)
      throw invalid(
        'partition',
        `partition is required: consumer ${consumer.name} has ${consumer.partitions} partitions (0 to ${consumer.partitions - 1})`,
      );
    return 0;
  }
  if (partition >= consumer.partitions) {
    throw invalid(
      'partition',
      `partition must be from 0 to ${consumer.partitions - 1}: consumer ${consumer.name} has ${consumer.partitions} partition(s)`,
    );
  }
  return partition;
}

function filterOf(consumer: StoredConsumer, partition: number): ChangeFilter {
  return {
    ...(consumer.workspaces.length > 0 ? { workspaces: consumer.workspaces } : {}),
    ...(consumer.types.length > 0 ? { types: consumer.types } : {}),
    ...(consumer.profileIds.length > 0 ? { profileIds: consumer.profileIds } : {}),
    ...(consumer.platforms.length > 0 ? { platforms: consumer.platforms } : {}),
    ...(consumer.partitions > 1 ? { partition: { index: partition, of: consumer.partitions } } : {}),
  };
}
