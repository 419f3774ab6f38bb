import type { Db } from './database.service';

/** What to run once each open transaction (opened by `transaction`) has committed. */
const pending = new WeakMap<Db, Array<() => void>>();

/**
 * Runs `work` in one transaction on `db`, then, once it has committed, what the code inside registered with
 * `afterCommit`, in order. A transaction that fails runs none of it.
 */
export async function transaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  const hooks: Array<() => void> = [];
  const result = await db.transaction().execute((trx) => {
    pending.set(trx, hooks);
    return work(trx);
  });
  for (const hook of hooks) hook();
  return result;
}

/**
 * Runs `hook` once what `db` just wrote is committed: at once when `db` is not a transaction (its statement has
 * committed already), after the commit when it is one opened by `transaction`. What a write tells other parts of the
 * process (a wake-up, say) must not reach them before its rows are there to be read, nor at all if they never are.
 * A transaction opened otherwise is refused: nothing would run the hook.
 */
export function afterCommit(db: Db, hook: () => void): void {
  if (!db.isTransaction) return hook();
  const hooks = pending.get(db);
  if (!hooks) throw new Error('afterCommit: the transaction was not opened with transaction() (src/database/after-commit.ts)');
  hooks.push(hook);
}
