import { Global, Module } from '@nestjs/common';
import { PozyModule } from '../pozy/pozy.module';
import { WorkspaceRegistry } from './workspace-registry.service';
import { WorkspaceRepository } from './workspace.repository';

/**
 * The workspaces this deployment mirrors: the `workspace` table and every replica's copy of it. Global: receive,
 * reconcile, the runs and the status all ask the registry which workspaces there are and with what key.
 */
@Global()
@Module({
  imports: [PozyModule],
  providers: [WorkspaceRepository, WorkspaceRegistry],
  exports: [WorkspaceRepository, WorkspaceRegistry],
})
export class WorkspacesModule {}
