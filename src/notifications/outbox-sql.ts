/** What a subscription can ask to be told about. */
export const NOTIFICATION_TYPES = ['post.changed', 'post.deleted', 'account.changed', 'account.removed'] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** A timestamp as JSON exactly as the query endpoints answer it (JavaScript's toISOString), whatever the session's time zone. */
export const isoSql = (expression: string): string => `to_char(${expression} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The outbox half of a mirror write: a CTE named `notified` that inserts one notification per active subscription
 * matching each row of `changes`, so it commits in the very statement that changed the mirror. `changes` must
 * have the columns `type`, `resource_key`, `sequence`, `pozy_updated_at`, `data` (jsonb), `profile_ids` and
 * `platforms` (text[]): one row per resource whose mirrored state changed, and none for a no-op write.
 */
export const fanOutCte = (changes: string): string => `
notified AS (
  INSERT INTO notification (id, subscription_id, type, resource_key, sequence, pozy_updated_at, data)
  SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), s.id, c.type, c.resource_key, c.sequence,
         c.pozy_updated_at, c.data
    FROM ${changes} c
    JOIN subscription s
      ON s.active AND s.deleted_at IS NULL AND c.type = ANY (s.event_types)
     AND (cardinality(s.profile_ids) = 0 OR s.profile_ids && c.profile_ids)
     AND (cardinality(s.platforms) = 0 OR s.platforms && c.platforms)
  RETURNING 1
)`;

/**
 * A `changes` CTE's guard: with no active subscription there is nobody to tell, and the notification bodies (the
 * costly part of a write of many rows) are not built at all. Evaluated once per statement.
 */
export const ANY_SUBSCRIPTION = `EXISTS (SELECT 1 FROM subscription WHERE active AND deleted_at IS NULL)`;

/**
 * The statement's answer once CTEs `written` (the rows the guarded write touched, with `inserted`, `changed_by` and
 * `read_id` columns), `changes` and `notified` exist. What changed is counted from `written`, since `changes` is
 * empty when nobody subscribes.
 */
export const FAN_OUT_RESULT = `
SELECT (SELECT count(*) FROM written)::int AS written, (SELECT count(*) FILTER (WHERE inserted) FROM written)::int AS created,
       (SELECT count(*) FILTER (WHERE changed_by = read_id) FROM written)::int AS changed,
       (SELECT count(*) FROM notified)::int AS notified`;

export interface FanOutResult {
  /** Rows the guarded write replaced (a stale read replaces none). */
  written: number;
  /** Of those, rows the mirror did not hold before. */
  created: number;
  /** Resources whose mirrored state this write changed. */
  changed: number;
  /** Notifications it queued. */
  notified: number;
}
