-- Every per-workspace table gains workspace_id, leading its primary key (src/common/workspace-id.ts). The rows of a
-- database from before are the `default` workspace's: the column is added with that default (no rewrite of the
-- table since PostgreSQL 11), which is then dropped, so that no later insert can forget its workspace. The keys are
-- rebuilt, which reads each table once.

-- DropIndex
DROP INDEX "pozy_event_resource_type_resource_id_timestamp_idx";

-- DropIndex
DROP INDEX "post_status_id_deleted_at_platform_names_idx";

-- DropIndex
DROP INDEX "backfill_run_started_at_idx";

-- DropIndex
DROP INDEX "notification_subscription_id_resource_key_sequence_idx";

-- DropIndex
DROP INDEX "change_position_key";

-- DropIndex
DROP INDEX "change_resource_id_id_idx";

-- DropIndex
DROP INDEX "sweep_run_kind_status_idx";

-- AlterTable
ALTER TABLE "pozy_event" DROP CONSTRAINT "pozy_event_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "pozy_event_pkey" PRIMARY KEY ("workspace_id", "id");

-- AlterTable
ALTER TABLE "reconcile_request" DROP CONSTRAINT "reconcile_request_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "reconcile_request_pkey" PRIMARY KEY ("workspace_id", "key");

-- AlterTable
ALTER TABLE "post" DROP CONSTRAINT "post_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "post_pkey" PRIMARY KEY ("workspace_id", "id");

-- AlterTable
ALTER TABLE "account" DROP CONSTRAINT "account_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "account_pkey" PRIMARY KEY ("workspace_id", "id");

-- AlterTable
ALTER TABLE "backfill_run" DROP CONSTRAINT "backfill_run_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "backfill_run_pkey" PRIMARY KEY ("workspace_id", "id");

-- AlterTable
ALTER TABLE "dead_letter" DROP CONSTRAINT "dead_letter_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "dead_letter_pkey" PRIMARY KEY ("workspace_id", "id");

-- AlterTable
ALTER TABLE "notification" ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default';

-- AlterTable
ALTER TABLE "change" DROP CONSTRAINT "change_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "change_pkey" PRIMARY KEY ("workspace_id", "id");

-- AlterTable
ALTER TABLE "sweep_run" DROP CONSTRAINT "sweep_run_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "sweep_run_pkey" PRIMARY KEY ("workspace_id", "id");

-- AlterTable
ALTER TABLE "sweep_seen" DROP CONSTRAINT "sweep_seen_pkey",
ADD COLUMN "workspace_id" TEXT NOT NULL DEFAULT 'default',
ADD CONSTRAINT "sweep_seen_pkey" PRIMARY KEY ("workspace_id", "run_id", "resource", "id");

-- CreateIndex
CREATE INDEX "pozy_event_workspace_id_resource_type_resource_id_timestamp_idx" ON "pozy_event"("workspace_id", "resource_type", "resource_id", "timestamp");

-- CreateIndex
CREATE INDEX "post_status_id_deleted_at_platform_names_workspace_id_idx" ON "post"("status", "id", "deleted_at", "platform_names", "workspace_id");

-- CreateIndex
CREATE INDEX "post_id_workspace_id_idx" ON "post"("id", "workspace_id");

-- CreateIndex
CREATE INDEX "account_id_workspace_id_idx" ON "account"("id", "workspace_id");

-- CreateIndex
CREATE INDEX "backfill_run_id_idx" ON "backfill_run"("id");

-- CreateIndex
CREATE INDEX "backfill_run_workspace_id_started_at_idx" ON "backfill_run"("workspace_id", "started_at");

-- CreateIndex
CREATE INDEX "dead_letter_id_idx" ON "dead_letter"("id");

-- CreateIndex
CREATE INDEX "notification_subscription_id_workspace_id_resource_key_sequ_idx" ON "notification"("subscription_id", "workspace_id", "resource_key", "sequence");

-- CreateIndex
CREATE INDEX "change_position_idx" ON "change"("position");

-- CreateIndex
CREATE INDEX "change_workspace_id_resource_id_id_idx" ON "change"("workspace_id", "resource_id", "id");

-- CreateIndex
CREATE INDEX "sweep_run_id_idx" ON "sweep_run"("id");

-- CreateIndex
CREATE INDEX "sweep_run_workspace_id_kind_status_idx" ON "sweep_run"("workspace_id", "kind", "status");

-- Written by hand: the rows above are the default workspace's; from now on every insert names its workspace.
ALTER TABLE "pozy_event" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "reconcile_request" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "post" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "account" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "backfill_run" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "dead_letter" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "notification" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "change" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "sweep_run" ALTER COLUMN "workspace_id" DROP DEFAULT;
ALTER TABLE "sweep_seen" ALTER COLUMN "workspace_id" DROP DEFAULT;
