-- AlterTable
ALTER TABLE "subscription" ADD COLUMN     "previous_secret" TEXT,
ADD COLUMN     "previous_secret_until" TIMESTAMPTZ(3),
ALTER COLUMN "secret" DROP NOT NULL;

-- Written by hand (a data change): a deleted subscription signs nothing any more, so it keeps no secret.
UPDATE "subscription" SET "secret" = NULL WHERE "deleted_at" IS NOT NULL;
