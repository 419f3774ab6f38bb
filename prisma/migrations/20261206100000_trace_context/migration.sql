-- AlterTable
ALTER TABLE "pozy_event" ADD COLUMN     "trace_parent" TEXT;

-- AlterTable
ALTER TABLE "notification" ADD COLUMN     "trace_parent" TEXT;

