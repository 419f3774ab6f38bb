-- CreateTable
CREATE TABLE "resource_version" (
    "workspace_id" TEXT NOT NULL,
    "resource_type" TEXT NOT NULL,
    "resource_id" TEXT NOT NULL,
    "sequence" INTEGER NOT NULL,
    "read_at" TIMESTAMPTZ(3) NOT NULL,
    "read_id" UUID,
    "event_ids" JSONB,
    "data" JSONB NOT NULL,

    CONSTRAINT "resource_version_pkey" PRIMARY KEY ("workspace_id","resource_type","resource_id","sequence")
);

-- CreateIndex
CREATE INDEX "resource_version_workspace_id_resource_type_resource_id_rea_idx" ON "resource_version"("workspace_id", "resource_type", "resource_id", "read_at", "sequence");

-- CreateIndex
CREATE INDEX "resource_version_read_at_idx" ON "resource_version"("read_at");
