import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A TCP port that was free on loopback a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Polls until `url` answers 2xx (with `anyStatus`: answers at all), or fails after `timeoutMs`; at once when `child`,
 * the process meant to answer, has exited meanwhile (its own output says why).
 */
export async function waitForHttp(url: string, timeoutMs: number, options: { anyStatus?: boolean; child?: ChildProcess } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { child } = options;
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      throw new Error(`the process meant to answer ${url} exited (${child.exitCode ?? child.signalCode}) before it did: its output above says why`);
    }
    const ok = await fetch(url).then(
      (response) => response.ok || options.anyStatus === true,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}
