-- Partial indexes, written by hand (see the note at the top of schema.prisma): deleted posts and removed accounts,
-- which GET /sync/status, the status page and /metrics count through them exactly, however large the mirror.
CREATE INDEX "post_deleted_idx" ON "post"("id") WHERE "deleted_at" IS NOT NULL;

CREATE INDEX "account_removed_idx" ON "account"("id") WHERE "removed_at" IS NOT NULL;
