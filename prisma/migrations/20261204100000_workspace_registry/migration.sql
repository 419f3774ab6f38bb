-- The workspace registry (src/workspaces/): workspaces added through POST /admin/workspaces.
-- CreateTable
CREATE TABLE "workspace" (
    "id" TEXT NOT NULL,
    "name" TEXT,
    "api_key" TEXT NOT NULL,
    "api_url" TEXT NOT NULL,
    "rate_limit_per_minute" INTEGER,
    "webhook_secret" TEXT NOT NULL,
    "previous_secret" TEXT,
    "previous_secret_until" TIMESTAMPTZ(3),
    "manage_webhook" BOOLEAN NOT NULL,
    "webhook_id" TEXT,
    "webhook_health" JSONB,
    "state" TEXT NOT NULL DEFAULT 'active',
    "removal_run_id" UUID,
    "removal" JSONB,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "version" INTEGER NOT NULL DEFAULT 1,

    CONSTRAINT "workspace_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "workspace_created_at_id_idx" ON "workspace"("created_at", "id");


-- Written by hand (see the note at the top of schema.prisma): what the admin API validates, held by the table too.
ALTER TABLE "workspace"
    ADD CONSTRAINT "workspace_id_slug" CHECK ("id" ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    ADD CONSTRAINT "workspace_state" CHECK ("state" IN ('active', 'paused', 'removing', 'detached'));
