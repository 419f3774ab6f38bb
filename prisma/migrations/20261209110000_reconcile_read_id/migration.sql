-- AlterTable
ALTER TABLE "reconcile_read" ADD COLUMN     "read_id" UUID;
