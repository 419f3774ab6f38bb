-- Written by hand (see the note at the top of schema.prisma): tombstones, the rows a 404 for a post the mirror never
-- held leaves (deleted, no Pozy version). GET /sync/status, the status page and /metrics leave them out of the post
-- figures, counting them through this index however many deleted posts there are.
CREATE INDEX "post_tombstone_idx" ON "post"("id") WHERE "deleted_at" IS NOT NULL AND "pozy_updated_at" IS NULL;
