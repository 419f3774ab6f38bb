-- CreateTable
CREATE TABLE "change" (
    "id" BIGSERIAL NOT NULL,
    "position" BIGINT,
    "type" TEXT NOT NULL,
    "resource_id" TEXT NOT NULL,
    "sequence" INTEGER NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "profile_ids" TEXT[],
    "platforms" TEXT[],
    "data" JSONB NOT NULL,

    CONSTRAINT "change_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "change_position_key" ON "change"("position");

-- CreateIndex
CREATE INDEX "change_resource_id_id_idx" ON "change"("resource_id", "id");

-- Written by hand (a partial index; see the note at the top of schema.prisma): the sequencer's look for committed
-- entries without a position reads only those, however long the feed is.
CREATE INDEX "change_unsequenced_idx" ON "change"("id") WHERE "position" IS NULL;
