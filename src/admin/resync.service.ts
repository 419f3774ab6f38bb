import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { ResourceType, resourceJobKey } from '../queue/tasks';
import { ReconcileDispatcher } from '../reconcile/reconcile-dispatcher.service';

// Due now, and forced: only a read that starts after this request may count as having seen everything.
const REQUEST_READ = `
INSERT INTO reconcile_request AS r (key, resource_type, resource_id, due_at, requested_at, forced_at)
VALUES ($1, $2, $3, now(), now(), now())
ON CONFLICT (key) DO UPDATE SET due_at = now(), requested_at = now(), forced_at = now()
RETURNING due_at`;

@Injectable()
export class ResyncService {
  constructor(
    private readonly database: DatabaseService,
    private readonly dispatcher: ReconcileDispatcher,
  ) {}

  /** Asks for a read of the resource from Pozy now; returns the job key it will run under. */
  async request(type: ResourceType, id: string): Promise<string> {
    const key = resourceJobKey(type, id);
    const { rows } = await this.database.pool.query<{ due_at: Date }>(REQUEST_READ, [key, type, id]);
    this.dispatcher.nudge(rows[0].due_at);
    return key;
  }
}
