import { DEFAULT_WORKSPACE, WorkspaceId } from './workspace-id';

/** The resources a reconcile job reads from Pozy; accounts are read per profile (`GET /v1/accounts?profileId=`). */
export const RESOURCE_TYPES = ['post', 'profile'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export const isResourceType = (value: string): value is ResourceType => (RESOURCE_TYPES as readonly string[]).includes(value);

/** A resource's key within its workspace: its reconcile request's, and its job's in the default workspace. */
export const resourceJobKey = (resource: ResourceType, id: string): string => `${resource}:${id}`;

/**
 * The job key that keeps one pending job per resource across workspaces. The default workspace's keys are the
 * resource keys alone, as they were before workspaces (a job queued then still absorbs a new one).
 */
export const workspaceJobKey = (workspace: WorkspaceId, key: string): string => (workspace === DEFAULT_WORKSPACE ? key : `${workspace}/${key}`);
