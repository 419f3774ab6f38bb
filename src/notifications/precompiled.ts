import type { Compilable, CompiledQuery, QueryResult } from 'kysely';
import type { Db } from '../database/database.service';

const ARGUMENT = '\u0000precompiled argument: ';

/**
 * A statement of fixed shape, built and compiled by Kysely once per process, then executed with each call's
 * arguments. Kysely builds and compiles its query tree on every call otherwise: for the deliverer's statements (the
 * batch statement has nine CTEs) that costs more CPU than the rest of a batch.
 *
 * `build` gets a stand-in for each argument and must hand each to the builder as a parameter value, as it is: never
 * computed on, nor as an `in` list (which Kysely expands by its length). The rest of the statement's parameters are
 * its constants, sent as compiled.
 */
export function precompiled<A extends object, O>(build: (db: Db, args: A) => Compilable<O>): (db: Db, args: A) => Promise<QueryResult<O>> {
  let compiled: CompiledQuery<O> | undefined;
  const standIns = new Proxy({} as A, { get: (_, name) => `${ARGUMENT}${String(name)}` });
  return (db, args) => {
    compiled ??= build(db, standIns).compile();
    const parameters = compiled.parameters.map((value) =>
      typeof value === 'string' && value.startsWith(ARGUMENT) ? args[value.slice(ARGUMENT.length) as keyof A] : value,
    );
    return db.executeQuery({ ...compiled, parameters });
  };
}
