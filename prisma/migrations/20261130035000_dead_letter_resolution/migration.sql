-- AlterTable
ALTER TABLE "dead_letter" ADD COLUMN     "resolution" TEXT,
ADD COLUMN     "resolved_at" TIMESTAMPTZ(3);

