import { IsIn, IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { DEFAULT_WORKSPACE, WORKSPACE_ID, WorkspaceId } from '../common/workspace-id';

/** The resources a reconcile job reads from Pozy; accounts are read per profile (`GET /v1/accounts?profileId=`). */
export const RESOURCE_TYPES = ['post', 'profile'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export class ReconcilePayload {
  /** Absent in a job queued before workspaces: the default one's. */
  @IsOptional()
  @Matches(WORKSPACE_ID)
  workspace?: WorkspaceId;

  @IsIn(RESOURCE_TYPES)
  resource!: ResourceType;

  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  id!: string;
}

/**
 * Every task the worker runs, with the class its payload must validate against. Adding a task here without a
 * @TaskHandler for it stops the service at boot.
 */
export const TASKS = {
  reconcile: ReconcilePayload,
} as const;

export type TaskName = keyof typeof TASKS;
export type TaskPayload<N extends TaskName> = InstanceType<(typeof TASKS)[N]>;
export const TASK_NAMES = Object.keys(TASKS) as TaskName[];

/** A resource's key within its workspace: its reconcile request's, and its job's in the default workspace. */
export const resourceJobKey = (resource: ResourceType, id: string): string => `${resource}:${id}`;

/**
 * The job key that keeps one pending job per resource across workspaces. The default workspace's keys are the
 * resource keys alone, as they were before workspaces (a job queued then still absorbs a new one).
 */
export const workspaceJobKey = (workspace: WorkspaceId, key: string): string => (workspace === DEFAULT_WORKSPACE ? key : `${workspace}/${key}`);

export const isResourceType = (value: string): value is ResourceType => (RESOURCE_TYPES as readonly string[]).includes(value);
