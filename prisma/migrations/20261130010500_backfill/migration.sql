-- AlterTable
ALTER TABLE "pozy_event" ADD COLUMN     "recovered_by" UUID;

-- CreateTable
CREATE TABLE "backfill_run" (
    "id" UUID NOT NULL,
    "trigger" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    "scan_from" TIMESTAMPTZ(3),
    "newest_log_at" TIMESTAMPTZ(3),
    "rows_scanned" INTEGER NOT NULL DEFAULT 0,
    "events_recovered" INTEGER NOT NULL DEFAULT 0,
    "narrowed_types" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "error" TEXT,

    CONSTRAINT "backfill_run_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "backfill_run_started_at_idx" ON "backfill_run"("started_at");

