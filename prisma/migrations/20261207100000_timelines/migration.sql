-- AlterTable
ALTER TABLE "pozy_event" ADD COLUMN     "copies" INTEGER NOT NULL DEFAULT 1;

-- CreateTable
CREATE TABLE "reconcile_read" (
    "workspace_id" TEXT NOT NULL,
    "id" BIGSERIAL NOT NULL,
    "resource_key" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMPTZ(3),
    "lane" TEXT,
    "status_code" INTEGER,
    "retried" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "outcome" TEXT NOT NULL,
    "detail" TEXT,
    "trace_id" TEXT,

    CONSTRAINT "reconcile_read_pkey" PRIMARY KEY ("workspace_id","id")
);

-- CreateIndex
CREATE INDEX "reconcile_read_workspace_id_resource_key_at_idx" ON "reconcile_read"("workspace_id", "resource_key", "at");

-- CreateIndex
CREATE INDEX "reconcile_read_at_idx" ON "reconcile_read" USING BRIN ("at");

-- CreateIndex
CREATE INDEX "dead_letter_workspace_id_resource_key_created_at_idx" ON "dead_letter"("workspace_id", "resource_key", "created_at");

-- CreateIndex
CREATE INDEX "notification_workspace_id_resource_key_created_at_idx" ON "notification"("workspace_id", "resource_key", "created_at");

