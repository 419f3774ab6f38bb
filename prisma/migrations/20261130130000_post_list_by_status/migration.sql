-- GET /posts with a status: a page's ids in id order from this index alone (an index-only scan), the filters on
-- deletion and platform checked in it too. Ordered by id alone, a status rare on a platform cost a scan of the table.
-- CreateIndex
CREATE INDEX "post_status_id_deleted_at_platform_names_idx" ON "post"("status", "id", "deleted_at", "platform_names");
