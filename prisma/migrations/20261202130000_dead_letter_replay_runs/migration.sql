-- CreateTable
CREATE TABLE "dead_letter_replay_run" (
    "id" UUID NOT NULL,
    "queue" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "spool_id" UUID,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    "total" INTEGER NOT NULL DEFAULT 0,
    "replayed" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "batches" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,

    CONSTRAINT "dead_letter_replay_run_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "dead_letter_replay_run_started_at_idx" ON "dead_letter_replay_run"("started_at");


-- Written by hand (see the note at the top of schema.prisma): a bulk replay walks the letters not replayed yet by
-- (created_at, id), so each batch reads what it holds however many replayed letters lie between.
CREATE INDEX "dead_letter_replay_idx" ON "dead_letter"("created_at", "id") WHERE "replayed_at" IS NULL AND "resolved_at" IS NULL;
