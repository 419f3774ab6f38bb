-- AlterTable
ALTER TABLE "backfill_run" ADD COLUMN     "events_skipped" INTEGER NOT NULL DEFAULT 0;

