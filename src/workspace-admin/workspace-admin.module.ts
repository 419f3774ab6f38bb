import { NotificationsModule } from '../notifications/notifications.module';
import { Module } from '@nestjs/common';
import { AdminModule } from '../admin/admin.module';
import { BackfillModule } from '../backfill/backfill.module';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { PozyModule } from '../pozy/pozy.module';
import { ReconcileModule } from '../reconcile/reconcile.module';
import { RunsModule } from '../runs/runs.module';
import { ManagedWebhooks } from './managed-webhooks.service';
import { WorkspaceRowsRepository } from './workspace-rows.repository';
import { WorkspaceRemoval } from './workspace-removal.service';
import { WorkspacesController } from './workspaces.controller';
import { WorkspacesService } from './workspaces.service';

/** `/admin/workspaces`: the registry's admin API, the managed webhooks in Pozy, and the removal of a workspace. */
@Module({
  imports: [AdminModule, BackfillModule, RunsModule, PozyModule, ReconcileModule, NotificationsModule],
  controllers: [WorkspacesController],
  providers: [AdminTokenGuard, WorkspacesService, ManagedWebhooks, WorkspaceRemoval, WorkspaceRowsRepository],
})
export class WorkspaceAdminModule {}
