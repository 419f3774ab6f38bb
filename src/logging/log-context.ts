import { PinoLogger } from 'nestjs-pino';
// nestjs-pino keeps the per-request logger in this AsyncLocalStorage; work outside requests (jobs) joins it the same way.
import { storage, Store } from 'nestjs-pino/storage';

/** Runs `fn` with `bindings` (e.g. a job id) on every line Nest's Logger writes inside it. */
export function withLogContext<T>(bindings: Record<string, unknown>, fn: () => Promise<T>): Promise<T> {
  const root = PinoLogger.root as PinoLogger['logger'] | undefined;
  const parent = storage.getStore()?.logger ?? root;
  if (!parent) return fn();
  return storage.run(new Store(parent.child(bindings)), fn);
}
