-- AlterTable
ALTER TABLE "reconcile_request" ADD COLUMN     "forced_at" TIMESTAMPTZ(3);

