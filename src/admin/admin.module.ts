import { Module } from '@nestjs/common';
import { ReconcileModule } from '../reconcile/reconcile.module';
import { AdminController } from './admin.controller';
import { AdminTokenGuard } from './admin-token.guard';
import { ResyncService } from './resync.service';

@Module({ imports: [ReconcileModule], controllers: [AdminController], providers: [AdminTokenGuard, ResyncService] })
export class AdminModule {}
