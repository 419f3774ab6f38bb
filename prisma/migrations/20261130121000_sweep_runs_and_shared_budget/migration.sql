-- CreateTable
CREATE TABLE "sweep_run" (
    "id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "trigger" TEXT NOT NULL,
    "dry_run" BOOLEAN NOT NULL DEFAULT false,
    "status" TEXT NOT NULL,
    "phase" TEXT NOT NULL,
    "owner" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "resumed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "posts_done_at_resume" INTEGER NOT NULL DEFAULT 0,
    "finished_at" TIMESTAMPTZ(3),
    "pass" INTEGER NOT NULL DEFAULT 1,
    "posts_offset" INTEGER NOT NULL DEFAULT 0,
    "accounts_listed_from" TIMESTAMPTZ(3),
    "posts_listed_from" TIMESTAMPTZ(3),
    "missing_cursor" TEXT,
    "accounts_total" INTEGER,
    "posts_total" INTEGER,
    "accounts_done" INTEGER NOT NULL DEFAULT 0,
    "posts_done" INTEGER NOT NULL DEFAULT 0,
    "pages_read" INTEGER NOT NULL DEFAULT 0,
    "posts_created" INTEGER NOT NULL DEFAULT 0,
    "posts_changed" INTEGER NOT NULL DEFAULT 0,
    "posts_deleted" INTEGER NOT NULL DEFAULT 0,
    "posts_unchanged" INTEGER NOT NULL DEFAULT 0,
    "accounts_created" INTEGER NOT NULL DEFAULT 0,
    "accounts_changed" INTEGER NOT NULL DEFAULT 0,
    "accounts_deleted" INTEGER NOT NULL DEFAULT 0,
    "accounts_unchanged" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "error" TEXT,

    CONSTRAINT "sweep_run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sweep_seen" (
    "run_id" UUID NOT NULL,
    "resource" TEXT NOT NULL,
    "id" TEXT NOT NULL,

    CONSTRAINT "sweep_seen_pkey" PRIMARY KEY ("run_id","resource","id")
);

-- CreateTable
CREATE TABLE "pozy_budget" (
    "id" INTEGER NOT NULL,
    "state" JSONB NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "pozy_budget_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "sweep_run_kind_status_idx" ON "sweep_run"("kind", "status");

-- CreateIndex
CREATE INDEX "sweep_run_started_at_idx" ON "sweep_run"("started_at");


-- The budget's one row, which every replica reads and writes.
INSERT INTO "pozy_budget" ("id", "state", "version") VALUES (1, '{}', 0);
