/** The database did not acknowledge in time (ACK_TIMEOUT_MS). */
export class AckTimeoutError extends Error {
  constructor(ms: number) {
    super(`the database did not acknowledge within ${ms} ms`);
    this.name = 'AckTimeoutError';
  }
}

/** Rejects with `late()` (by default AckTimeoutError) when `promise` has not settled within `ms`. */
export function withDeadline<T>(promise: Promise<T>, ms: number, late: () => Error = () => new AckTimeoutError(ms)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
