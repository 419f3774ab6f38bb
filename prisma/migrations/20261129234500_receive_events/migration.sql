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

-- CreateTable
CREATE TABLE "reconcile_request" (
    "key" TEXT NOT NULL,
    "resource_type" TEXT NOT NULL,
    "resource_id" TEXT NOT NULL,
    "due_at" TIMESTAMPTZ(3),
    "requested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "dispatched_at" TIMESTAMPTZ(3),

    CONSTRAINT "reconcile_request_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "pozy_event_resource_type_resource_id_timestamp_idx" ON "pozy_event"("resource_type", "resource_id", "timestamp");

-- CreateIndex
CREATE INDEX "pozy_event_received_at_idx" ON "pozy_event" USING BRIN ("received_at");

-- CreateIndex
CREATE INDEX "reconcile_request_due_at_idx" ON "reconcile_request"("due_at");

