import type { DestinationStream } from 'pino';

declare global {
  var __TEST_LOG__: { write(text: string): void } | undefined;
}

/**
 * Where the services a test starts write their logs: kept aside and printed only if the test fails
 * (test/support/quiet-environment.js). Outside that environment (another Jest config), straight to stdout.
 */
export const testLog: DestinationStream = {
  write: (text: string) => (globalThis.__TEST_LOG__ ?? process.stdout).write(text),
};
