import { Injectable, Logger } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { ResourceType, resourceJobKey, workspaceJobKey } from '../common/resources';
import { ReconcileSignal } from '../receive/reconcile-signal';
import { ReconcileRequestRepository } from '../reconcile/reconcile-request.repository';
import { ReconcileService } from '../reconcile/reconcile.service';
import { ReconcileReadRepository } from '../reconcile/reconcile-read.repository';
import { DEFAULT_WORKSPACE, WorkspaceId } from '../common/workspace-id';

@Injectable()
export class ResyncService {
  private readonly logger = new Logger(ResyncService.name);

  constructor(
    private readonly requests: ReconcileRequestRepository,
    private readonly reconcileSignal: ReconcileSignal,
    private readonly reconciler: ReconcileService,
    private readonly reads: ReconcileReadRepository,
  ) {}

  /**
   * Asks for a read of the resource from Pozy now; returns the job key it will run under. A post the mirror never
   * held is first read here, synchronously: if Pozy does not know it either, the caller is told so (404) and
   * nothing is queued (the job would write nothing). If that read fails, the resync is queued as usual.
   */
  async request(type: ResourceType, id: string, workspace: WorkspaceId = DEFAULT_WORKSPACE): Promise<string> {
    if (type === 'post' && (await this.unknownToPozy(workspace, id))) {
      throw new ApiError('unknown_to_pozy', `Pozy does not know post ${id}, and the mirror never held it`);
    }
    const key = resourceJobKey(type, id);
    this.reconcileSignal.requested(await this.requests.requestForcedRead(workspace, key, type, id));
    await this.reads.record(workspace, key, { outcome: 'resync', detail: 'an operator asked for a read, whatever the skip rule says' });
    return workspaceJobKey(workspace, key);
  }

  private async unknownToPozy(workspace: WorkspaceId, id: string): Promise<boolean> {
    try {
      return await this.reconciler.unknownPost(workspace, id);
    } catch (error) {
      this.logger.warn(`post:${id}: could not ask Pozy whether it knows the post (${(error as Error).message}); resync queued`);
      return false;
    }
  }
}
