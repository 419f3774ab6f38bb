/** The database did not acknowledge in time (ACK_TIMEOUT_MS). */
export class AckTimeoutError extends Error {
  constructor(ms: number) {
    super(`the database did not acknowledge within ${ms} ms`);
    this.name = 'AckTimeoutError';
  }
}

/** Rejects with AckTimeoutError when `promise` has not settled within `ms`. */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AckTimeoutError(ms)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
