-- Every dead letter is in the `delivery` queue (the acknowledgment queue lives in each replica's local spool), so an
-- index led by `queue` only made its entries larger: the admin list and the status page read dead_letter newest first
-- through created_at alone. dead_letter_unsettled_idx (queue, kind) stays: /sync/status and /metrics count through it
-- with a filter on queue, index-only.

-- DropIndex
DROP INDEX "dead_letter_queue_created_at_idx";

-- CreateIndex
CREATE INDEX "dead_letter_created_at_idx" ON "dead_letter"("created_at");
