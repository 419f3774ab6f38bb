import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '@nestjs/common';

/**
 * A custom setting on the postmaster's command line naming the process that started it. An orphan is re-parented
 * (to init, or to a subreaper such as `systemd --user`), so "its parent is still the process that started it"
 * tells a live owner from a dead one wherever the orphan lands.
 */
const OWNER_SETTING = 'pozy_sync.owner_pid';
const OWNER_ARGUMENT = / -c pozy_sync\.owner_pid=(\d+)(?: |$)/;

export function ownerFlags(): string[] {
  return ['-c', `${OWNER_SETTING}=${process.pid}`];
}

// Fast shutdown normally takes well under a second; these bound a wedged one.
const FAST_SHUTDOWN_MS = 15_000;
const IMMEDIATE_SHUTDOWN_MS = 5_000;
const KILLED_MS = 10_000;

interface ProcessInfo {
  pid: number;
  ppid: number;
  args: string;
}

/**
 * Makes the data directory startable after its previous user was killed (`kill -9`, the OOM killer): an embedded
 * PostgreSQL it left running there is stopped, a postmaster.pid naming a process that is not that PostgreSQL is
 * removed. Throws, naming the pid, when a live process still uses the server.
 */
export async function recoverLeftoverPostgres(dataDir: string, logger: Logger): Promise<void> {
  const lockFile = join(dataDir, 'postmaster.pid');
  const lock = readLockFile(lockFile);
  // Absent, or naming a process that is gone: PostgreSQL replaces a stale file itself.
  if (!lock || !isAlive(lock.pid)) return;
  const processes = await listProcesses().catch((error: unknown) => {
    throw new Error(
      `${lockFile} names process ${lock.pid}, which is running; telling whether it is a leftover PostgreSQL needs ps: ${String(error)}`,
    );
  });
  const postmaster = processes.find((p) => p.pid === lock.pid);
  if (!postmaster) return;
  if (!postmaster.args.includes(`postgres -D ${dataDir} -p `)) {
    // PostgreSQL would take the pid's new owner for another postmaster and refuse to start.
    logger.warn(`${lockFile} names process ${lock.pid}, which is not PostgreSQL on this directory (${postmaster.args}): removing the stale file`);
    rmSync(lockFile, { force: true });
    return;
  }
  const owner = OWNER_ARGUMENT.exec(postmaster.args);
  // Started without the setting (by an older version): only init adopting it shows its owner is gone.
  const orphaned = owner ? postmaster.ppid !== Number(owner[1]) : postmaster.ppid === 1;
  if (!orphaned) {
    const parent = processes.find((p) => p.pid === postmaster.ppid);
    throw new Error(
      `The embedded PostgreSQL on ${dataDir} (pid ${postmaster.pid}, port ${lock.port}) is in use by process ${postmaster.ppid}` +
        `${parent ? ` (${parent.args})` : ''}: stop that process first, or use another directory or DATABASE_URL`,
    );
  }
  logger.warn(
    `An embedded PostgreSQL (pid ${postmaster.pid}, port ${lock.port}) was left running on ${dataDir} by process ` +
      `${owner ? owner[1] : 'unknown'}, which is gone: stopping it before starting again`,
  );
  const started = Date.now();
  const children = processes.filter((p) => p.ppid === postmaster.pid).map((p) => p.pid);
  await stopOrphan(postmaster.pid, children, logger);
  // A clean exit removes postmaster.pid; one left by a kill is stale only once the pid is reaped (not a zombie).
  if (!(await waitUntil(() => Promise.resolve(!existsSync(lockFile) || !isAlive(postmaster.pid)), KILLED_MS))) {
    throw new Error(
      `The leftover embedded PostgreSQL (pid ${postmaster.pid}) has exited, but its parent has not reaped it: ${lockFile} still holds the directory`,
    );
  }
  const port = lock.port;
  if (port !== undefined && !(await waitUntil(() => portIsFree(port), KILLED_MS))) {
    throw new Error(`The leftover embedded PostgreSQL (pid ${postmaster.pid}) has exited, but port ${port} is still in use`);
  }
  logger.warn(`Stopped the leftover embedded PostgreSQL (pid ${postmaster.pid}) in ${Date.now() - started} ms`);
}

/** SIGINT (fast shutdown: clean, checkpointed); then SIGQUIT (immediate shutdown); then SIGKILL to it and its children. */
async function stopOrphan(pid: number, children: number[], logger: Logger): Promise<void> {
  const gone = async () => !(await isRunning(pid));
  signal(pid, 'SIGINT');
  if (await waitUntil(gone, FAST_SHUTDOWN_MS)) return;
  logger.warn(`PostgreSQL (pid ${pid}) did not stop within ${FAST_SHUTDOWN_MS} ms of SIGINT: sending SIGQUIT`);
  signal(pid, 'SIGQUIT');
  if (await waitUntil(gone, IMMEDIATE_SHUTDOWN_MS)) return;
  logger.warn(`PostgreSQL (pid ${pid}) did not stop within ${IMMEDIATE_SHUTDOWN_MS} ms of SIGQUIT: killing it and its children`);
  // Children still attached to its shared memory would keep a new server from starting.
  for (const target of [pid, ...children]) signal(target, 'SIGKILL');
  const allGone = async () => (await Promise.all([pid, ...children].map(isRunning))).every((running) => !running);
  if (!(await waitUntil(allGone, KILLED_MS))) {
    throw new Error(`The leftover embedded PostgreSQL (pid ${pid}) did not exit, even after SIGKILL`);
  }
}

function readLockFile(path: string): { pid: number; port: number | undefined } | undefined {
  let lines: string[];
  try {
    lines = readFileSync(path, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  // Line 1 is the postmaster's pid, line 4 its port.
  const [pid, port] = [Number(lines[0]), Number(lines[3])];
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return { pid, port: Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined };
}

async function listProcesses(): Promise<ProcessInfo[]> {
  // Fields and flags both procps (Linux) and BSD ps (macOS) know; -ww: whole command lines.
  const { stdout } = await promisify(execFile)('ps', ['-ww', '-A', '-o', 'pid=,ppid=,stat=,args='], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.split('\n').flatMap((line) => {
    const match = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line);
    // A zombie has exited; only its parent's wait is missing.
    return match && !match[3].startsWith('Z') ? [{ pid: Number(match[1]), ppid: Number(match[2]), args: match[4] }] : [];
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, someone else's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Exited processes stay zombies until their parent reaps them (init may take a while): those count as gone. */
async function isRunning(pid: number): Promise<boolean> {
  if (!isAlive(pid)) return false;
  const { stdout } = await promisify(execFile)('ps', ['-o', 'stat=', '-p', String(pid)]).catch(() => ({ stdout: '' }));
  return stdout.trim() !== '' && !stdout.trim().startsWith('Z');
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
