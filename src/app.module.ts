import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { AdminModule } from './admin/admin.module';
import { BackfillModule } from './backfill/backfill.module';
import { ChangesModule } from './changes/changes.module';
import { AllExceptionsFilter } from './common/all-exceptions.filter';
import { OpenReadsWarning } from './common/read-access';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { ReadReplicaModule } from './database/read-replica.module';
import { StorableInputPipe } from './common/storable-input.pipe';
import { QueryValidationPipe } from './common/compiled-query-check';
import { validationFailed } from './common/validate-dto';
import { HealthModule } from './health/health.module';
import { MetricsModule } from './metrics/metrics.module';
import { AccountsModule } from './mirror/accounts/accounts.module';
import { PostsModule } from './mirror/posts/posts.module';
import { NotificationsModule } from './notifications/notifications.module';
import { QueueModule } from './queue/queue.module';
import { ReadTokensModule } from './read-tokens/read-tokens.module';
import { ReconcileModule } from './reconcile/reconcile.module';
import { RetentionModule } from './retention/retention.module';
import { LockedScheduleModule } from './schedule/locked-schedule.module';
import { StatusPageModule } from './status-page/status-page.module';
import { RunsModule } from './runs/runs.module';
import { TracingModule } from './tracing/tracing.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { WorkspaceAdminModule } from './workspace-admin/workspace-admin.module';
import { WorkspacesModule } from './workspaces/workspaces.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        DatabaseModule,
        MetricsModule,
        TracingModule,
        ReadReplicaModule,
        ReadTokensModule,
        WorkspacesModule,
        QueueModule,
        WebhooksModule,
        ReconcileModule,
        PostsModule,
        AccountsModule,
        NotificationsModule,
        ChangesModule,
        AdminModule,
        WorkspaceAdminModule,
        BackfillModule,
        RunsModule,
        RetentionModule,
        HealthModule,
        StatusPageModule,
        LockedScheduleModule,
      ],
      providers: [
        OpenReadsWarning,
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        // First, for every parameter and body: text PostgreSQL cannot store is a 400 naming it, never a 500.
        { provide: APP_PIPE, useClass: StorableInputPipe },
        {
          // Query strings and params: unknown ones are refused, and every problem is named.
          provide: APP_PIPE,
          useValue: new QueryValidationPipe((errors) => validationFailed(errors, { code: 'invalid_request', what: 'request' })),
        },
      ],
    };
  }
}
