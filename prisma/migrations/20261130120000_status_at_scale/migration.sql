-- CreateIndex
CREATE INDEX "post_synced_at_idx" ON "post"("synced_at");

-- CreateIndex
CREATE INDEX "account_synced_at_idx" ON "account"("synced_at");

-- Partial indexes, written by hand: schema.prisma does not declare them (see the note at its top). Each covers a
-- small subset that GET /sync/status, the status page and /metrics count or take the oldest of, so those figures
-- cost the size of the subset, not of the table.

-- Pending reads, and the oldest one's age.
CREATE INDEX "reconcile_request_pending_idx" ON "reconcile_request"("requested_at") WHERE "due_at" IS NOT NULL;

-- Notifications pending or dead: in all, per subscriber (its health), and the oldest pending one per subscriber.
CREATE INDEX "notification_unsettled_idx" ON "notification"("state", "subscription_id", "created_at")
  WHERE "state" IN ('pending', 'dead');

-- Dead letters neither replayed nor resolved, by queue and kind.
CREATE INDEX "dead_letter_unsettled_idx" ON "dead_letter"("queue", "kind")
  WHERE "replayed_at" IS NULL AND "resolved_at" IS NULL;

-- The backfill's gap report: only recovered events are indexed, so a delivered event's insert writes no entry.
CREATE INDEX "pozy_event_recovered_idx" ON "pozy_event"("timestamp") WHERE "recovered_by" IS NOT NULL;

-- A block range is summarized as soon as the next one starts filling, not at the next vacuum: recent-window
-- scans would otherwise read every range inserted since then.
ALTER INDEX "pozy_event_received_at_idx" SET (autosummarize = on);
