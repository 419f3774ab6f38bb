-- CreateTable
CREATE TABLE "data_migration" (
    "name" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'running',
    "cursor" TEXT,
    "rows_done" BIGINT NOT NULL DEFAULT 0,
    "rows_total" BIGINT,
    "batches" INTEGER NOT NULL DEFAULT 0,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    "last_error" TEXT,

    CONSTRAINT "data_migration_pkey" PRIMARY KEY ("name")
);

