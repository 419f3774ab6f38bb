import { IsIn, IsNotEmpty, IsString, MaxLength } from 'class-validator';

/** The resources a reconcile job reads from Pozy; accounts are read per profile (`GET /v1/accounts?profileId=`). */
export const RESOURCE_TYPES = ['post', 'profile'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export class ReconcilePayload {
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

/** The job key that keeps one pending job per resource. */
export const resourceJobKey = (resource: ResourceType, id: string): string => `${resource}:${id}`;

export const isResourceType = (value: string): value is ResourceType => (RESOURCE_TYPES as readonly string[]).includes(value);
