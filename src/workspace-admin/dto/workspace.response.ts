import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class WorkspaceWebhookResponse {
  @ApiProperty({ description: "Where Pozy delivers this workspace's events.", example: 'https://sync.example.com/webhooks/pozy/acme-eu' })
  url!: string;

  @ApiProperty({ description: 'Whether pozy-sync made the subscription in Pozy and keeps it healthy.' })
  managed!: boolean;

  @ApiProperty({ type: String, nullable: true, description: "The managed subscription's id in Pozy." })
  subscriptionId!: string | null;

  @ApiProperty({
    type: Object,
    nullable: true,
    description:
      'The last check of the managed subscription: `{ checkedAt, isActive, failureCount, reenabledAt?, reenabledBecause?, turningOn?, error? }`; `turningOn`: found off, and the request to turn it on failed (the next check finishes the repair).',
  })
  health!: unknown;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Until when the secret before the last rotation is still accepted.',
  })
  previousSecretUntil!: Date | null;

  @ApiPropertyOptional({ description: 'Only in the answer that made it, when generated for a webhook you set up in Pozy yourself: set it there.' })
  secret?: string;

  @ApiPropertyOptional({ type: Object, description: "On creation of a managed webhook: Pozy's test event, `{ delivered, answer }`." })
  test?: unknown;
}

/** A workspace as the admin API answers it: never its API key, never its secret (but once). */
export class WorkspaceResponse {
  @ApiProperty({ example: 'acme-eu' })
  id!: string;

  @ApiProperty({ type: String, nullable: true })
  name!: string | null;

  @ApiProperty({
    enum: ['environment', 'api'],
    description: '`environment`: `default`, from POZY_API_KEY; `api`: added with POST /admin/workspaces.',
  })
  source!: string;

  @ApiProperty({ enum: ['active', 'paused', 'removing', 'detached'] })
  state!: string;

  @ApiProperty({ example: 'https://api.pozy.ai' })
  apiUrl!: string;

  @ApiProperty({ description: "The figure this workspace gives its key's budget (the smallest of a key's workspaces holds)." })
  rateLimitPerMinute!: number;

  @ApiProperty({ type: WorkspaceWebhookResponse })
  webhook!: WorkspaceWebhookResponse;

  @ApiProperty({ type: Object, nullable: true, description: 'A removal under way: `{ startedAt, deleted, keepData, finishedAt? }`.' })
  removal!: unknown;

  @ApiProperty({ type: String, nullable: true })
  lastError!: string | null;

  @ApiProperty({ type: String, format: 'date-time' })
  createdAt!: Date;
}

/** `GET /admin/workspaces/:id`: the workspace and its state. */
export class WorkspaceDetailResponse extends WorkspaceResponse {
  @ApiProperty({ type: Object, description: 'Its import: `{ status, run, position? }` (`queued`: waiting for one of IMPORT_CONCURRENCY places).' })
  import!: unknown;

  @ApiProperty({ type: Object, nullable: true })
  lastSweep!: unknown;

  @ApiProperty({ type: Object, nullable: true })
  lastBackfill!: unknown;

  @ApiProperty({ type: Object, description: "Its API key's budget, shared by every replica and workspace using the key." })
  budget!: unknown;

  @ApiProperty({ type: Object, description: 'Its reads waiting: `{ pending, oldestRequestedAt }` (its lag).' })
  reads!: unknown;
}

export class WorkspacePageResponse {
  @ApiProperty({ type: [WorkspaceResponse] })
  data!: WorkspaceResponse[];

  @ApiProperty({ type: String, nullable: true })
  nextCursor!: string | null;
}

export class WorkspaceRemovalResponse {
  @ApiProperty({ format: 'uuid' })
  runId!: string;

  @ApiProperty({ enum: ['removing', 'detached'] })
  state!: string;
}

export class WorkspaceRunStartedResponse {
  @ApiProperty({ format: 'uuid' })
  runId!: string;
}

export class WorkspaceResyncResponse {
  @ApiProperty({ enum: [true] })
  accepted!: true;

  @ApiProperty({ example: 'acme-eu/post:66aa01f3c2b1e4d5f6a7b8c9' })
  reconcile!: string;
}
