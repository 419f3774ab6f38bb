import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { PrimaryChange, PrimaryWatch } from '../database/primary-watch';
import { OpsEvents } from './ops-events.service';

/**
 * Tells the team's ops endpoint that the database's primary moved to another server or restarted
 * (`ops.database.failover`), once however many replicas saw it: the occurrence is named by the new primary's
 * address and postmaster start time, which every replica reads alike. A primary that was only unreachable for a
 * while and came back as the same server is not told (the metrics and the status page show that outage).
 */
@Injectable()
export class DatabaseFailoverNotice implements OnApplicationBootstrap {
  constructor(
    private readonly watch: PrimaryWatch,
    private readonly ops: OpsEvents,
  ) {}

  onApplicationBootstrap(): void {
    this.watch.onWritable((change) => {
      if (change.kind !== 'reconnect') void this.tell(change);
    });
  }

  private async tell({ kind, at, from, to, withoutPrimaryMs }: PrimaryChange): Promise<void> {
    await this.ops.emit({
      type: 'ops.database.failover',
      key: `database.${kind}:${to.address}:${to.startedAt}`,
      workspaceId: null,
      data: { kind, from: from?.address ?? null, to: to.address, primaryStartedAt: to.startedAt, seenAt: at.toISOString(), withoutPrimaryMs },
    });
  }
}
