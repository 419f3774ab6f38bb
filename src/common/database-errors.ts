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

/** Socket-level failures (ECONNREFUSED, ECONNRESET, ...) and pg's own words for a connection that went away. */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection is closed|Client was closed|Query read timeout|not queryable|read-only transaction|in recovery/i;

/**
 * The database, not the statement, failed: no connection, a connection lost, or a server that cannot take writes now
 * (shutting down 57P01/57P02, starting or in recovery 57P03, read-only 25006, connection exception class 08). What
 * failed so is worth doing again once a writable primary is back (a failover), unlike a statement's own error.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (isNoConnection(error)) return true;
  const code = codeOf(error);
  if (typeof code === 'string' && (/^E[A-Z]+$/.test(code) || code.startsWith('08') || ['57P01', '57P02', '57P03', '25006'].includes(code))) {
    return true;
  }
  return error instanceof Error && UNAVAILABLE_MESSAGES.test(error.message);
}
