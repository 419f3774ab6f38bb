-- CreateTable
CREATE TABLE "ops_event" (
    "id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "workspace_id" TEXT,
    "data" JSONB NOT NULL,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ops_event_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ops_event_occurred_at_idx" ON "ops_event" USING BRIN ("occurred_at");

