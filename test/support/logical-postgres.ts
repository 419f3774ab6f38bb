import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports';
import { runAs } from './streaming-replica';

const run = promisify(execFile);

/** A PostgreSQL server of the test's own, in a temporary directory, started with `wal_level=logical`. */
export interface LogicalServer {
  url(database: string, user?: string): string;
  stop(): Promise<void>;
}

/**
 * initdb and pg_ctl from `bin` (postgresBinDir()), run as `postgres` when the test runs as root (PostgreSQL refuses
 * root), as the streaming-replica tests do. The machine's own server stays as it is.
 */
export async function startLogicalServer(bin: string): Promise<LogicalServer> {
  const owner = runAs();
  const root = mkdtempSync(join(tmpdir(), 'pozy-logical-'));
  if ('uid' in owner) chownSync(root, owner.uid, owner.gid);
  const tool = (name: string, args: string[]) =>
    run(join(bin, name), args, { ...owner, cwd: root, env: { PATH: process.env.PATH ?? '', HOME: root, LC_ALL: 'C' } });
  const port = await freePort();
  const dataDir = join(root, 'data');
  // Loopback only, sockets in the temporary directory, no fsync (the data is thrown away); logical WAL and a few slots.
  const options = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${root}`,
    '-c fsync=off',
    '-c wal_level=logical',
    '-c max_replication_slots=4',
    '-c max_wal_senders=4',
  ].join(' ');
  await tool('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions']);
  try {
    await tool('pg_ctl', ['-D', dataDir, '-o', options, '-l', `${dataDir}.log`, '-w', '-t', '60', 'start']);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  return {
    url: (database, user = 'postgres') => `postgresql://${user}@127.0.0.1:${port}/${database}`,
    async stop() {
      await tool('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']).catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
