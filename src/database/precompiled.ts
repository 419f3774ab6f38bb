import {
  type Compilable,
  type CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type RawBuilder,
  sql,
} from 'kysely';
import type { DB } from '../generated/kysely/database';
import { prepareAs } from './prepared-statements';

/**
 * Statements of fixed shape are built and compiled once per process, then executed with each call's arguments:
 * Kysely otherwise builds and compiles its query tree on every call, which for the hot statements (the receive
 * statement, the deliverer's batches, the status figures) costs about as much client CPU as running them.
 */

/** A Kysely that compiles PostgreSQL and never connects: statements compiled once run later on a `db` of the caller's. */
const COMPILER = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** The compiler, typed for `T`'s tables (the schema's, or those plus tables declared by hand). */
export const statementCompiler = <T = DB>(): Kysely<T> => COMPILER as unknown as Kysely<T>;

/** Stands for one named argument of a precompiled statement while it is compiled. */
class Argument {
  constructor(readonly name: string) {}
}

/** Where a precompiled statement runs: any Kysely, a transaction or a connection. */
type Executor = Pick<Kysely<DB>, 'executeQuery'>;

/** A statement compiled once: run it with `(db, args)`; `compiled` is its text, arguments as stand-ins. */
export interface Precompiled<A extends object, O> {
  (db: Executor, args: A): Promise<QueryResult<O>>;
  readonly compiled: CompiledQuery<O>;
}

/**
 * `build` gets a stand-in for each argument and must hand each to the builder as a parameter value, as it is: never
 * computed on, nor as an `in` list (which Kysely expands by its length). The rest of the statement's parameters are
 * its constants, sent as compiled. Compiled on first use. `prepare`: the name PostgreSQL keeps it parsed and planned
 * under on each connection (prepared-statements.ts), for a statement run often enough that parsing it every time shows.
 */
export function precompiled<A extends object, O, T = DB>(
  build: (db: Kysely<T>, args: A) => Compilable<O>,
  options: { prepare?: string } = {},
): Precompiled<A, O> {
  let compiled: { query: CompiledQuery<O>; parameters: readonly unknown[] } | undefined;
  const compile = () => {
    if (compiled) return compiled;
    const standIns = new Proxy({} as A, { get: (_, name) => new Argument(String(name)) });
    const query = build(statementCompiler<T>(), standIns).compile();
    if (options.prepare) prepareAs(options.prepare, query.sql);
    return (compiled = { query, parameters: query.parameters });
  };
  const run = (db: Executor, args: A) => {
    const { query, parameters } = compile();
    const values = parameters.map((value) => (value instanceof Argument ? args[value.name as keyof A] : value));
    return db.executeQuery<O>({ ...query, parameters: values });
  };
  return Object.defineProperty(run, 'compiled', { get: () => compile().query }) as Precompiled<A, O>;
}

/**
 * An expression with no parameters (the whole answer of a resource), compiled once to SQL text: Kysely otherwise builds
 * and compiles its tree on every request, which was the largest share of a page's CPU in Node after the JSON itself.
 */
export function fixedSql<T>(expression: RawBuilder<T>): RawBuilder<T> {
  const compiled = expression.compile(COMPILER);
  if (compiled.parameters.length > 0) throw new Error(`fixedSql: the expression has parameters: ${compiled.sql}`);
  return sql.raw<T>(compiled.sql);
}
