/**
 * SQLSTATEs that blame the event rather than the database: data exceptions (class 22, e.g. a \u0000 or a lone
 * surrogate jsonb refuses) and nesting too deep for PostgreSQL (54001).
 */
export function isEventDataError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code === '54001');
}
