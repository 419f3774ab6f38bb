-- AlterTable
ALTER TABLE "reconcile_request" ADD COLUMN     "failing_since" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "dead_letter" (
    "id" UUID NOT NULL,
    "queue" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "resource_key" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "reason" TEXT NOT NULL,
    "error" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL,
    "first_failure_at" TIMESTAMPTZ(3) NOT NULL,
    "last_failure_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "replayed_at" TIMESTAMPTZ(3),
    "replay_count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "dead_letter_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "dead_letter_queue_created_at_idx" ON "dead_letter"("queue", "created_at");

