import { Expression, ExpressionBuilder, RawBuilder, sql, SqlBool } from 'kysely';
import type { DB, Notification } from '../generated/kysely/database';

/** The database's clock: the one the outbox's due times are compared with. */
export const now = (): RawBuilder<Date> => sql<Date>`now()`;

/** `ms` milliseconds as an interval. */
export const milliseconds = (ms: number): RawBuilder<string> => sql<string>`${ms} * interval '1 millisecond'`;

/** A timestamp as JSON exactly as the query endpoints answer it (JavaScript's toISOString), whatever the session's time zone. */
export const isoText = (timestamp: Expression<Date | null>): RawBuilder<string> =>
  sql<string>`to_char(${timestamp} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Per resource, only the newest notification is sent or replayed: an older one is superseded, so a subscriber never
 * gets an older version after a newer one (cancelled ones, of a deleted subscription, do not count). For a statement
 * over `notification as n`.
 */
export function newerVersionExists(eb: ExpressionBuilder<DB & { n: Notification }, 'n'>): Expression<SqlBool> {
  return eb.exists(
    eb
      .selectFrom('notification as m')
      .select(eb.lit(1).as('one'))
      .whereRef('m.subscription_id', '=', 'n.subscription_id')
      .whereRef('m.workspace_id', '=', 'n.workspace_id')
      .whereRef('m.resource_key', '=', 'n.resource_key')
      .whereRef('m.sequence', '>', 'n.sequence')
      .where('m.state', '<>', 'cancelled'),
  );
}
