-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "pozy_event" (
    "id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "timestamp" TIMESTAMPTZ(3) NOT NULL,
    "delivery_id" TEXT,
    "attempt" INTEGER,
    "test" BOOLEAN NOT NULL DEFAULT false,
    "resource_type" TEXT,
    "resource_id" TEXT,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "pozy_event_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "pozy_event_resource_type_resource_id_timestamp_idx" ON "pozy_event"("resource_type", "resource_id", "timestamp");

-- CreateIndex
CREATE INDEX "pozy_event_received_at_idx" ON "pozy_event"("received_at");

