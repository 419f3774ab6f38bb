import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type { Pool, PoolClient } from 'pg';

/**
 * Statements PostgreSQL keeps parsed and planned per connection (named prepared statements), by their SQL text. A
 * statement sent by name is parsed once per connection, not on every execution, and its later executions send only
 * its parameters: the receive statement's text is several times the size of its Bind message for a small batch.
 */
const NAMES = new Map<string, string>();

/** Runs `sql` as the prepared statement `name` wherever it is executed from now on (see preparingPool). */
export function prepareAs(name: string, sql: string): void {
  const taken = [...NAMES].find(([text, other]) => other === name && text !== sql);
  if (taken) throw new Error(`prepared statement ${name} names another statement already`);
  NAMES.set(sql, name);
}

/**
 * The pool as Kysely's PostgresDialect takes it, whose clients send the statements named by prepareAs by their name.
 * Every other statement goes to pg as it is. One wrapper per pg client, so that Kysely keeps one connection object
 * per client as it does for pg's own.
 */
export function preparingPool(pool: Pool): PostgresPool {
  const wrappers = new WeakMap<PoolClient, PostgresPoolClient>();
  const wrap = (client: PoolClient): PostgresPoolClient => {
    const query = (textOrCursor: unknown, values?: readonly unknown[]): unknown => {
      const name = typeof textOrCursor === 'string' ? NAMES.get(textOrCursor) : undefined;
      if (name !== undefined) return client.query({ name, text: textOrCursor as string, values: values as unknown[] });
      return client.query(textOrCursor as string, values as unknown[]);
    };
    return { query: query as PostgresPoolClient['query'], release: (destroy?: boolean) => client.release(destroy) };
  };
  return {
    connect: async () => {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) wrappers.set(client, (wrapper = wrap(client)));
      return wrapper;
    },
    end: () => pool.end(),
  };
}
