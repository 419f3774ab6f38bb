-- AlterTable
ALTER TABLE "post" ADD COLUMN     "changed_by" UUID,
ADD COLUMN     "sequence" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "account" ADD COLUMN     "changed_by" UUID,
ADD COLUMN     "sequence" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "subscription" (
    "id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "description" TEXT,
    "event_types" TEXT[],
    "profile_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "platforms" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "active" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),
    "failing_since" TIMESTAMPTZ(3),
    "last_success_at" TIMESTAMPTZ(3),
    "last_failure_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "paused_at" TIMESTAMPTZ(3),
    "paused_reason" TEXT,
    "lease_owner" TEXT,
    "lease_until" TIMESTAMPTZ(3),

    CONSTRAINT "subscription_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "notification" (
    "id" TEXT NOT NULL,
    "subscription_id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "resource_key" TEXT NOT NULL,
    "sequence" INTEGER NOT NULL,
    "pozy_updated_at" TIMESTAMPTZ(3),
    "data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) DEFAULT CURRENT_TIMESTAMP,
    "failing_since" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "delivered_at" TIMESTAMPTZ(3),
    "replay_count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "notification_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "notification_attempt" (
    "id" BIGSERIAL NOT NULL,
    "notification_id" TEXT NOT NULL,
    "subscription_id" UUID NOT NULL,
    "attempted_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "status_code" INTEGER,
    "outcome" TEXT NOT NULL,
    "error" TEXT,
    "replay" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "notification_attempt_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "notification_pending_idx" ON "notification"("subscription_id", "next_attempt_at");

-- CreateIndex
CREATE INDEX "notification_subscription_id_resource_key_sequence_idx" ON "notification"("subscription_id", "resource_key", "sequence");

-- CreateIndex
CREATE INDEX "notification_subscription_id_created_at_idx" ON "notification"("subscription_id", "created_at");

-- CreateIndex
CREATE INDEX "notification_attempt_notification_id_idx" ON "notification_attempt"("notification_id");

-- CreateIndex
CREATE INDEX "notification_attempt_subscription_id_attempted_at_idx" ON "notification_attempt"("subscription_id", "attempted_at");

-- AddForeignKey
ALTER TABLE "notification" ADD CONSTRAINT "notification_subscription_id_fkey" FOREIGN KEY ("subscription_id") REFERENCES "subscription"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "notification_attempt" ADD CONSTRAINT "notification_attempt_notification_id_fkey" FOREIGN KEY ("notification_id") REFERENCES "notification"("id") ON DELETE CASCADE ON UPDATE CASCADE;

