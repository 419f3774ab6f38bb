#!/usr/bin/env node
// `npm run start:dev`: compiles src/ into dist/ in watch mode and runs the service from dist/ under `node --watch`,
// which restarts it (SIGTERM, so it shuts down cleanly, embedded PostgreSQL included) whenever a compiled file it
// loaded changes. The service starts only after the first compile without errors: starting it earlier would
// restart it at once, when tsc's first pass rewrites every file. Ctrl-C stops both.
const { spawn } = require('node:child_process');
const { rmSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const tscBin = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const ANSI = /\x1b\[[0-9;]*m/g;

// As `npm run build` does: no compiled file of a deleted source lingers.
rmSync(path.join(root, 'dist'), { recursive: true, force: true });

const tsc = spawn(process.execPath, [tscBin, '-p', 'tsconfig.build.json', '--watch', '--preserveWatchOutput', '--pretty'], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
});
let service;
let pending = '';
tsc.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  if (service) return;
  pending += chunk.toString('utf8');
  const lines = pending.split('\n');
  pending = lines.pop();
  if (lines.some((line) => /Found 0 errors\b/.test(line.replace(ANSI, '')))) startService();
});

function startService() {
  service = spawn(process.execPath, ['--enable-source-maps', '--watch', 'dist/main.js'], {
    cwd: root,
    stdio: 'inherit',
    // No load balancer to drain in development: a restart need not wait for one.
    env: { SHUTDOWN_DRAIN_MS: '0', ...process.env },
  });
  service.on('exit', (code, signal) => stop(code ?? (signal ? 1 : 0)));
}

let stopping = false;
function stop(code) {
  if (stopping) return;
  stopping = true;
  tsc.kill('SIGTERM');
  if (service && service.exitCode === null && service.signalCode === null) {
    // node --watch passes the signal to the service and exits once the service has stopped.
    service.kill('SIGTERM');
    service.once('exit', () => process.exit(code));
  } else {
    process.exit(code);
  }
}

tsc.on('exit', (code) => {
  if (!stopping) {
    console.error(`tsc --watch exited (${code ?? 'signal'}); stopping`);
    stop(1);
  }
});
// SIGHUP too: a closed terminal must still stop the service (and its embedded PostgreSQL).
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(0));
