/** How a database failure reads when the statement is not at fault: it may succeed if tried again later. */

/** 57014 is also an operator's pg_cancel_backend; only the statement timeout's message names it. */
const QUERY_CANCELED = '57014';
const STATEMENT_TIMEOUT = /statement timeout/i;

/**
 * A connection could not be had in time: pg-pool waited for a free one past connectionTimeoutMillis, or a new one
 * took longer than that to open, or PostgreSQL refused one (too many connections, or starting up or shutting down).
 */
const NO_CONNECTION_MESSAGES = /timeout exceeded when trying to connect|Connection terminated due to connection timeout/i;
const NO_CONNECTION_CODES = new Set(['53300', '57P03']);

const codeOf = (error: unknown) => (error as { code?: unknown } | null)?.code;

/** PostgreSQL stopped the statement at its `statement_timeout`. */
export function isStatementTimeout(error: unknown): boolean {
  return codeOf(error) === QUERY_CANCELED && error instanceof Error && STATEMENT_TIMEOUT.test(error.message);
}

/** No database connection came in time (the pool stayed full, or PostgreSQL had none to give). */
export function isNoConnection(error: unknown): boolean {
  const code = codeOf(error);
  return (typeof code === 'string' && NO_CONNECTION_CODES.has(code)) || (error instanceof Error && NO_CONNECTION_MESSAGES.test(error.message));
}
