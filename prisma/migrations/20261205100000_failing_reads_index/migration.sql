-- Written by hand: schema.prisma does not declare partial indexes (see the note at its top). The reads that keep
-- failing in the worker's retries, and the oldest of them: the mirror lag (GET /sync/status, /metrics) counts them
-- beside the reads still waiting, at the cost of that small subset.
CREATE INDEX "reconcile_request_failing_idx" ON "reconcile_request"("requested_at") WHERE "failing_since" IS NOT NULL;
