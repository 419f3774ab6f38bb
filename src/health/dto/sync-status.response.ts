import { ApiProperty, OmitType } from '@nestjs/swagger';
import { SubscriptionHealthResponse } from '../../notifications/dto/subscription.response';
import { LANES } from '../../pozy/budget/budget-policy';
import { SweepRunResponse } from '../../runs/dto/sweep-run.response';
import { EXACT_COUNT_LIMIT, HOUR_SCAN_LIMIT, SLICE_SCAN_LIMIT } from '../sync-figures.repository';

const DATE_TIME = { type: String, format: 'date-time' } as const;
const COUNT = { type: 'integer', example: 0 } as const;

/** Said of the counts that become PostgreSQL's estimate on large tables or subsets. */
const MAY_ESTIMATE = `Exact up to ${EXACT_COUNT_LIMIT.toLocaleString('en-US')} rows; beyond, PostgreSQL's estimate (listed in \`estimated\`).`;

export class QueueStatusResponse {
  @ApiProperty({ ...COUNT, description: `Resources waiting for a read from Pozy. ${MAY_ESTIMATE}` })
  pendingReads!: number;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Age of the oldest read still owed (waiting, or failing in retries); null when none.',
    example: null,
  })
  oldestPendingAgeMs!: number | null;

  @ApiProperty({ ...COUNT, description: `graphile-worker jobs waiting or running. ${MAY_ESTIMATE}` })
  jobs!: number;

  @ApiProperty({ ...COUNT, description: `Jobs whose last attempt failed. ${MAY_ESTIMATE}` })
  failingJobs!: number;
}

export class EventsStatusResponse {
  @ApiProperty({ ...COUNT, description: `Events stored (those retention has not pruned). ${MAY_ESTIMATE}` })
  received!: number;

  @ApiProperty({
    ...COUNT,
    description: `Events received in the last hour. Exact up to ${HOUR_SCAN_LIMIT.toLocaleString('en-US')}; beyond, each five-minute slice is read up to ${SLICE_SCAN_LIMIT.toLocaleString('en-US')} events and the rest of it extrapolated at the rate those came in (listed in \`estimated\` then).`,
  })
  lastHour!: number;

  @ApiProperty({
    ...DATE_TIME,
    nullable: true,
    description:
      'When the newest stored event was received. Exact, except after an unusually dense burst (then listed in `estimated`, and a lower bound).',
  })
  lastReceivedAt!: Date | null;
}

export class MirrorStatusResponse {
  @ApiProperty({ ...COUNT, description: `Posts mirrored, deleted ones aside. ${MAY_ESTIMATE}` })
  posts!: number;

  @ApiProperty({ ...COUNT, description: `Posts Pozy answered 404 for. ${MAY_ESTIMATE}` })
  deletedPosts!: number;

  @ApiProperty({ ...COUNT, description: `Accounts mirrored, removed ones aside. ${MAY_ESTIMATE}` })
  accounts!: number;

  @ApiProperty({ ...COUNT, description: `Accounts no longer in their profile's list. ${MAY_ESTIMATE}` })
  removedAccounts!: number;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'The last read from Pozy of any row.' })
  lastSyncedAt!: Date | null;
}

export class DeadLetterCountsResponse {
  @ApiProperty({ ...COUNT, description: `Reconciles and notifications given up on, neither replayed nor resolved. ${MAY_ESTIMATE}` })
  delivery!: number;

  @ApiProperty({ ...COUNT, description: "Events the database never acknowledged, in this replica's spool." })
  ack!: number;
}

export class SpoolStatusResponse {
  @ApiProperty({ ...COUNT, description: "Events this replica's spool holds, waiting for the database." })
  pending!: number;

  @ApiProperty({ type: 'integer', minimum: 0, nullable: true, description: 'How long the oldest of them has waited (ms); null when none waits.' })
  oldestPendingAgeMs!: number | null;
}

export class PrimaryChangeResponse {
  @ApiProperty({ enum: ['failover', 'restart', 'reconnect'], description: 'Another server, the same one restarted, or the same one reached again.' })
  kind!: string;

  @ApiProperty({ ...DATE_TIME, description: 'When this replica first found it taking writes.' })
  at!: Date;

  @ApiProperty({
    type: String,
    nullable: true,
    description: "The previous primary's `address:port` as PostgreSQL reported it; null in a public answer.",
  })
  from!: string | null;

  @ApiProperty({ type: String, nullable: true, description: "The new primary's `address:port`; null in a public answer." })
  to!: string | null;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'How long this replica saw no writable primary before it (ms).' })
  withoutPrimaryMs!: number;
}

export class BackgroundMigrationResponse {
  @ApiProperty({ example: '20261220100000_post_filter_tokens', description: 'The background data migration, named like a migration.' })
  name!: string;

  @ApiProperty({ enum: ['running', 'done'] })
  state!: string;

  @ApiProperty({ ...COUNT, description: 'Rows changed so far.' })
  rowsDone!: number;

  @ApiProperty({ type: 'integer', minimum: 0, nullable: true, description: "PostgreSQL's estimate, when it started, of the rows to change." })
  rowsTotal!: number | null;

  @ApiProperty({ ...COUNT, description: 'Batches committed.' })
  batches!: number;

  @ApiProperty(DATE_TIME)
  startedAt!: Date;

  @ApiProperty({ ...DATE_TIME, description: 'The last batch (or failure).' })
  updatedAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  finishedAt!: Date | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The last batch failure, until a batch succeeds (it is tried again); null in a public answer.',
  })
  lastError!: string | null;
}

export class DatabaseStatusResponse {
  @ApiProperty({
    enum: ['writable', 'read_only', 'unreachable'],
    description: 'Whether a server that takes writes is reachable through DATABASE_URL now.',
  })
  state!: string;

  @ApiProperty({ type: String, nullable: true, description: 'What the last look met while not writable; null when writable and in a public answer.' })
  reason!: string | null;

  @ApiProperty({ ...DATE_TIME, description: 'Since when the state holds.' })
  since!: Date;

  @ApiProperty({ type: String, nullable: true, description: "The primary's `address:port` as PostgreSQL reports it; null in a public answer." })
  primary!: string | null;

  @ApiProperty({ type: PrimaryChangeResponse, nullable: true, description: 'The last failover, restart or reconnection this replica saw.' })
  lastChange!: PrimaryChangeResponse | null;

  @ApiProperty({
    example: { failover: 1, restart: 0, reconnect: 2 },
    description: 'Changes of the primary this replica saw since its start, by kind.',
  })
  changes!: { failover: number; restart: number; reconnect: number };

  @ApiProperty({ minimum: 0, description: 'Seconds this replica saw no writable primary since its start, the ongoing outage included.' })
  withoutPrimarySeconds!: number;

  @ApiProperty({
    example: { wrong_server: 12, server_error: 3, connection_lost: 20, failover: 4 },
    description:
      "Connections this replica's pools refused or dropped since its start, by cause: `wrong_server` (the check at connect found a read-only server or a standby), `server_error` (57P01, 57P02, 57P03 or 25006), `connection_lost` (class 08 or the socket), `failover` (older than a new primary).",
  })
  connectionsDiscarded!: Record<string, number>;
}

export class BackfillLastRunResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ enum: ['running', 'succeeded', 'failed'] })
  status!: string;

  @ApiProperty(DATE_TIME)
  startedAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  finishedAt!: Date | null;

  @ApiProperty(COUNT)
  eventsRecovered!: number;

  @ApiProperty({ type: String, nullable: true, description: 'Why the run failed; null in a public (`redacted`) answer.' })
  error!: string | null;
}

export class GapHourResponse {
  @ApiProperty({ ...DATE_TIME, description: 'The hour the events happened.' })
  hour!: Date;

  @ApiProperty({ ...COUNT, description: 'Events Pozy logged that never reached us (recovered by the backfill).', example: 2 })
  events!: number;
}

export class BackfillStatusResponse {
  @ApiProperty({ type: BackfillLastRunResponse, nullable: true })
  lastRun!: BackfillLastRunResponse | null;

  @ApiProperty({ type: [GapHourResponse], description: 'The gap report, per hour, last 48 h.' })
  gaps!: GapHourResponse[];
}

export class SubscriberStatusResponse {
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'null in a public (`redacted`) answer.' })
  id!: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'https://example.com',
    description: "The endpoint's origin only: its path and query may hold a token. null in a public (`redacted`) answer.",
  })
  origin!: string | null;

  @ApiProperty()
  active!: boolean;

  @ApiProperty({ type: SubscriptionHealthResponse, description: 'In a public (`redacted`) answer, `lastError` and `pausedReason` are null.' })
  health!: SubscriptionHealthResponse;
}

export class NotificationsStatusResponse {
  @ApiProperty({ ...COUNT, description: `Notifications waiting to be sent. ${MAY_ESTIMATE}` })
  pending!: number;

  @ApiProperty({ type: 'integer', nullable: true, example: null, description: 'Age of the oldest pending notification; null when none.' })
  oldestPendingAgeMs!: number | null;

  @ApiProperty({ ...COUNT, description: 'Subscriptions the circuit breaker paused (deleted ones aside): the `paused` subscribers.' })
  pausedSubscriptions!: number;

  @ApiProperty({ type: [SubscriberStatusResponse] })
  subscribers!: SubscriberStatusResponse[];
}

export class ImportStatusResponse extends OmitType(SweepRunResponse, ['id', 'status'] as const) {
  @ApiProperty({
    enum: ['pending', 'running', 'succeeded', 'failed', 'not_needed', 'off'],
    description:
      '`pending`: INITIAL_IMPORT=auto and no worker has started it yet; `failed`: tried again from its checkpoint a minute later; `not_needed`: a full sweep already listed the workspace; `off`: INITIAL_IMPORT=off and none ran. The run fields below are absent until it starts.',
  })
  status!: string;

  @ApiProperty({ format: 'uuid', nullable: true, description: 'The run, for `GET /admin/sweep/{runId}`; null before it starts.' })
  runId!: string | null;
}

export class SweepStatusResponse {
  @ApiProperty({ type: SweepRunResponse, nullable: true, description: 'The latest full sweep (`POST /admin/sweep`, SWEEP_CRON).' })
  lastRun!: SweepRunResponse | null;
}

export class PozyObservedResponse {
  @ApiProperty({ ...COUNT, description: "Pozy's limit for the API key (X-RateLimit-Limit)." })
  limit!: number;

  @ApiProperty({ ...COUNT, description: "Requests of the window Pozy counted that were not pozy-sync's: another client of the key." })
  othersUsing!: number;

  @ApiProperty({ type: String, format: 'date-time' })
  observedAt!: Date;
}

export class PozyBudgetStatusResponse {
  @ApiProperty({
    ...COUNT,
    description:
      'POZY_RATE_LIMIT_PER_MINUTE (or a smaller limit given to another workspace of the key): requests every replica together may make per window with the key.',
  })
  limit!: number;

  @ApiProperty({ type: 'integer', example: 60_000 })
  windowMs!: number;

  @ApiProperty({
    ...COUNT,
    description: "What the deployment may use per window now: the limit, within Pozy's, less what others use and POZY_RATE_LIMIT_RESERVE.",
  })
  effectiveLimit!: number;

  @ApiProperty({ ...COUNT, description: 'Requests every replica made in the last window (counted a half second beyond it, to be safe).' })
  usedInWindow!: number;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Until when a 429 paused every replica.' })
  pausedUntil!: Date | null;

  @ApiProperty({ type: PozyObservedResponse, nullable: true, description: "What Pozy's X-RateLimit headers said last, within the window." })
  pozy!: PozyObservedResponse | null;

  @ApiProperty({ enum: LANES, isArray: true, description: 'Lanes waiting for a request now, highest first.' })
  waiting!: string[];
}

/** How far behind the mirror is, from the database alone. */
export class SyncStatusResponse {
  @ApiProperty({ type: QueueStatusResponse })
  queue!: QueueStatusResponse;

  @ApiProperty({ type: EventsStatusResponse })
  events!: EventsStatusResponse;

  @ApiProperty({ type: MirrorStatusResponse })
  mirror!: MirrorStatusResponse;

  @ApiProperty({ type: DeadLetterCountsResponse, description: 'Dead letters not replayed yet, by queue.' })
  deadLetters!: DeadLetterCountsResponse;

  @ApiProperty({ type: SpoolStatusResponse })
  spool!: SpoolStatusResponse;

  @ApiProperty({ type: DatabaseStatusResponse, description: "This replica's view of the database's primary and of its pools' connections." })
  database!: DatabaseStatusResponse;

  @ApiProperty({
    type: [BackgroundMigrationResponse],
    description: "The release's background data migrations started so far (a change to every row of a table after an upgrade), oldest first.",
  })
  backgroundMigrations!: BackgroundMigrationResponse[];

  @ApiProperty({ type: BackfillStatusResponse })
  backfill!: BackfillStatusResponse;

  @ApiProperty({ type: NotificationsStatusResponse })
  notifications!: NotificationsStatusResponse;

  @ApiProperty({ type: ImportStatusResponse, description: 'The import of the workspace on the first start, with its progress.' })
  import!: ImportStatusResponse;

  @ApiProperty({ type: SweepStatusResponse })
  sweep!: SweepStatusResponse;

  @ApiProperty({
    type: PozyBudgetStatusResponse,
    description: "The Pozy budget of the environment's API key (POZY_API_KEY), shared by every replica and workspace using that key.",
  })
  pozyBudget!: PozyBudgetStatusResponse;

  @ApiProperty({
    description:
      'Every workspace in bounded size: `total`, `byState` (active, paused, removing, detached), the managed webhooks Pozy reports failing (`webhooksFailing`; `failing` names up to 5), and the 5 whose oldest waiting read is oldest (`furthestBehind`, among the 1,000 oldest waiting reads); ids are null in a public answer. GET /admin/workspaces/:id has the detail.',
    example: {
      total: 3,
      byState: { active: 3, paused: 0, removing: 0, detached: 0 },
      webhooksFailing: 0,
      failing: [],
      furthestBehind: [{ id: 'acme-eu', oldestPendingAgeMs: 1200 }],
    },
  })
  workspaces!: {
    total: number;
    byState: Record<string, number>;
    webhooksFailing: number;
    failing: (string | null)[];
    furthestBehind: { id: string | null; oldestPendingAgeMs: number }[];
  };

  @ApiProperty({
    type: [String],
    example: ['events.received', 'mirror.posts', 'mirror.deletedPosts'],
    description:
      "The figures of this answer that are PostgreSQL's estimates rather than exact counts, by path. A table or subset too large to count on every call (see each figure) is estimated from the planner's statistics, scaled to the table's current size; every figure not listed is exact.",
  })
  estimated!: string[];

  @ApiProperty({
    description:
      "true: a request without a token, answered because STATUS_PUBLIC=true; subscribers' ids and origins and every error text (`backfill.lastRun.error`, the runs' `lastError` and `error`, subscribers' `lastError` and `pausedReason`) are null. Counts, states and times are all there.",
  })
  redacted!: boolean;
}
