-- AlterTable
ALTER TABLE "reconcile_request" ADD COLUMN     "last_read_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "post" (
    "id" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "content" TEXT,
    "scheduled_for" TIMESTAMPTZ(3),
    "published_at" TIMESTAMPTZ(3),
    "platforms" JSONB NOT NULL,
    "account_ids" TEXT[],
    "platform_names" TEXT[],
    "pozy_created_at" TIMESTAMPTZ(3),
    "pozy_updated_at" TIMESTAMPTZ(3),
    "last_event_at" TIMESTAMPTZ(3),
    "synced_at" TIMESTAMPTZ(3) NOT NULL,
    "read_started_at" TIMESTAMPTZ(3) NOT NULL,
    "read_id" UUID NOT NULL,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "post_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "account" (
    "id" TEXT NOT NULL,
    "profile_id" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "username" TEXT,
    "display_name" TEXT,
    "is_active" BOOLEAN NOT NULL,
    "needs_reconnection" BOOLEAN NOT NULL,
    "last_event_at" TIMESTAMPTZ(3),
    "synced_at" TIMESTAMPTZ(3) NOT NULL,
    "read_started_at" TIMESTAMPTZ(3) NOT NULL,
    "read_id" UUID NOT NULL,
    "removed_at" TIMESTAMPTZ(3),

    CONSTRAINT "account_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "post_status_idx" ON "post"("status");

-- CreateIndex
CREATE INDEX "post_pozy_updated_at_idx" ON "post"("pozy_updated_at");

-- CreateIndex
CREATE INDEX "post_account_ids_idx" ON "post" USING GIN ("account_ids");

-- CreateIndex
CREATE INDEX "post_platform_names_idx" ON "post" USING GIN ("platform_names");

-- CreateIndex
CREATE INDEX "account_profile_id_idx" ON "account"("profile_id");

