import { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { DB, Notification } from '../generated/kysely/database';

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
