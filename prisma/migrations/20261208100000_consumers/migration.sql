-- AlterTable
ALTER TABLE "read_token" ADD COLUMN     "consumers" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- CreateTable
CREATE TABLE "consumer" (
    "name" TEXT NOT NULL,
    "types" TEXT[],
    "workspaces" TEXT[],
    "profile_ids" TEXT[],
    "platforms" TEXT[],
    "partitions" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "consumer_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "consumer_partition" (
    "consumer_name" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "cursor" BIGINT NOT NULL,
    "committed_at" TIMESTAMPTZ(3),
    "last_read_at" TIMESTAMPTZ(3),
    "expired_at" TIMESTAMPTZ(3),

    CONSTRAINT "consumer_partition_pkey" PRIMARY KEY ("consumer_name","partition")
);

-- AddForeignKey
ALTER TABLE "consumer_partition" ADD CONSTRAINT "consumer_partition_consumer_name_fkey" FOREIGN KEY ("consumer_name") REFERENCES "consumer"("name") ON DELETE CASCADE ON UPDATE CASCADE;
