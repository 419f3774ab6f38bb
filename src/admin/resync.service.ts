import { Injectable } from '@nestjs/common';
import { ResourceType, resourceJobKey } from '../queue/tasks';
import { ReconcileDispatcher } from '../reconcile/reconcile-dispatcher.service';
import { ReconcileRequestRepository } from '../reconcile/reconcile-request.repository';

@Injectable()
export class ResyncService {
  constructor(
    private readonly requests: ReconcileRequestRepository,
    private readonly dispatcher: ReconcileDispatcher,
  ) {}

  /** Asks for a read of the resource from Pozy now; returns the job key it will run under. */
  async request(type: ResourceType, id: string): Promise<string> {
    const key = resourceJobKey(type, id);
    this.dispatcher.nudge(await this.requests.requestForcedRead(key, type, id));
    return key;
  }
}
