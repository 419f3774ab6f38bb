import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { testLog } from './test-log';

export const BUILT_MAIN = join(__dirname, '..', '..', 'dist', 'main.js');
export const BUILT_REENCRYPT = join(__dirname, '..', '..', 'dist', 'secrets-reencrypt.js');
export const BUILT_MIGRATE = join(__dirname, '..', '..', 'dist', 'migrate.js');
export const BUILT_DEMO = join(__dirname, '..', '..', 'dist-tools', 'demo', 'demo.js');

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  exited: Promise<number | null>;
}

/** Runs the built service (`node dist/main.js`), or another built program, as a user would, with exactly the given environment. */
export function spawnService(env: Record<string, string>, cwd: string, script = BUILT_MAIN, args: string[] = []): ServiceProcess {
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build && npm run build:tools\` (npm test does)`);
  const child = spawn(process.execPath, [script, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  // Kept for the test to read, and for its report should it fail.
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
    testLog.write(chunk.toString());
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}
