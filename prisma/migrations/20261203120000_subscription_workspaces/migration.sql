-- AlterTable
ALTER TABLE "subscription" ADD COLUMN     "workspace_ids" TEXT[] DEFAULT ARRAY[]::TEXT[];
