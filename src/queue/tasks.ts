import { IsIn, IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { RESOURCE_TYPES, type ResourceType } from '../common/resources';
import { WORKSPACE_ID, WorkspaceId } from '../common/workspace-id';

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
