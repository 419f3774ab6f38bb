import { execFile } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './ports';
import { waitFor } from './service';
import { runAs } from './streaming-replica';

const run = promisify(execFile);

/** One server of a cluster: `node0` starts as the primary, the others as its streaming standbys. */
export interface ClusterNode {
  name: string;
  port: number;
  url(database: string): string;
}

/**
 * Real PostgreSQL servers of the test's own, one primary and its streaming standbys made by pg_basebackup, in a
 * temporary directory, with the operations a failover is made of: kill, promote, follow, switch over, restart.
 */
export interface PgCluster {
  nodes: ClusterNode[];
  node(name: string): ClusterNode;
  /** One statement on a node, on a connection of its own. */
  query<R extends object>(node: ClusterNode, text: string, values?: unknown[]): Promise<R[]>;
  /** `pg_ctl stop -m immediate`: what a host that dies does (no shutdown checkpoint, connections cut). */
  kill(node: ClusterNode): Promise<void>;
  /** `pg_ctl stop -m fast`: a clean shutdown, every standby having received the whole WAL. */
  stop(node: ClusterNode): Promise<void>;
  start(node: ClusterNode): Promise<void>;
  /** `pg_ctl restart -m fast`. */
  restart(node: ClusterNode): Promise<void>;
  /** `pg_ctl promote`, then waits until the node takes writes. */
  promote(node: ClusterNode): Promise<void>;
  /** A running standby streams from `primary` from now on (primary_conninfo is reloadable since PostgreSQL 13). */
  follow(standby: ClusterNode, primary: ClusterNode): Promise<void>;
  /** A stopped former primary comes back as a standby of `primary` (standby.signal), on the newest timeline. */
  rejoinAsStandby(node: ClusterNode, primary: ClusterNode): Promise<void>;
  /** `synchronous_standby_names` on `primary`, reloaded: commits wait for those standbys. */
  synchronous(primary: ClusterNode, standbys: ClusterNode[]): Promise<void>;
  /** Whether a node is in recovery (a standby). */
  inRecovery(node: ClusterNode): Promise<boolean>;
  /** Waits until `standby` has replayed everything `primary` has flushed. */
  caughtUp(standby: ClusterNode, primary: ClusterNode, timeoutMs?: number): Promise<void>;
  /** The tail of a node's server log, for a failure's report. */
  log(node: ClusterNode): string;
  destroy(): Promise<void>;
}

/**
 * `standbys` standbys of `node0`; the first `synchronousStandbys` of them synchronous (a commit is acknowledged only
 * once they have it, so a promoted one has every acknowledged transaction). Servers run as `postgres` when the test
 * runs as root, listen on loopback only, and have no fsync (their data is thrown away).
 */
export async function startPgCluster(bin: string, options: { standbys: number; synchronousStandbys?: number }): Promise<PgCluster> {
  const owner = runAs();
  const root = mkdtempSync(join(tmpdir(), 'pozy-cluster-'));
  if ('uid' in owner) chownSync(root, owner.uid, owner.gid);
  const tool = (name: string, args: string[]) =>
    run(join(bin, name), args, { ...owner, cwd: root, env: { PATH: process.env.PATH ?? '', HOME: root, LC_ALL: 'C' } });
  const names = Array.from({ length: options.standbys + 1 }, (_, i) => `node${i}`);
  const nodes: ClusterNode[] = [];
  for (const name of names) {
    const port = await freePort();
    nodes.push({ name, port, url: (database) => `postgresql://postgres@127.0.0.1:${port}/${database}` });
  }
  const dir = (node: ClusterNode) => join(root, node.name);
  const logFile = (node: ClusterNode) => join(root, `${node.name}.log`);
  // cluster_name is what a standby's walreceiver calls itself: the name synchronous_standby_names lists.
  const serverOptions = (node: ClusterNode) =>
    [
      `-p ${node.port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${root}`,
      '-c fsync=off',
      `-c cluster_name=${node.name}`,
      '-c wal_keep_size=256MB',
      '-c max_connections=200',
    ].join(' ');
  const running = new Set<string>();
  const start = async (node: ClusterNode) => {
    await tool('pg_ctl', ['-D', dir(node), '-o', serverOptions(node), '-l', logFile(node), '-w', '-t', '60', 'start']);
    running.add(node.name);
  };
  const stopWith = async (node: ClusterNode, mode: 'fast' | 'immediate') => {
    await tool('pg_ctl', ['-D', dir(node), '-m', mode, '-w', '-t', '60', 'stop']);
    running.delete(node.name);
  };
  const conninfo = (primary: ClusterNode) => `host=127.0.0.1 port=${primary.port} user=postgres`;
  const query = async <R extends object>(node: ClusterNode, text: string, values: unknown[] = []): Promise<R[]> => {
    const client = new Client({ connectionString: node.url('postgres'), connectionTimeoutMillis: 5_000 });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  const [primary, ...standbys] = nodes;

  try {
    await tool('initdb', ['-D', dir(primary), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions']);
    await start(primary);
    for (const standby of standbys) {
      // -R: standby.signal and primary_conninfo, so it starts as a hot standby streaming from the primary.
      await tool('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(primary.port),
        '-U',
        'postgres',
        '-D',
        dir(standby),
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
      ]);
      await start(standby);
    }
  } catch (error) {
    for (const node of nodes) if (running.has(node.name)) await stopWith(node, 'immediate').catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
    throw error;
  }

  const cluster: PgCluster = {
    nodes,
    node: (name) => {
      const found = nodes.find((node) => node.name === name);
      if (!found) throw new Error(`no node ${name}`);
      return found;
    },
    query,
    kill: (node) => stopWith(node, 'immediate'),
    stop: (node) => stopWith(node, 'fast'),
    start,
    async restart(node) {
      await tool('pg_ctl', ['-D', dir(node), '-o', serverOptions(node), '-l', logFile(node), '-m', 'fast', '-w', '-t', '60', 'restart']);
      running.add(node.name);
    },
    async promote(node) {
      await tool('pg_ctl', ['-D', dir(node), '-w', '-t', '60', 'promote']);
      await waitFor(`${node.name} to take writes`, async () => ((await cluster.inRecovery(node)) ? undefined : true), 30_000, 50);
    },
    async follow(standby, newPrimary) {
      await query(standby, `ALTER SYSTEM SET primary_conninfo = '${conninfo(newPrimary)}'`);
      await query(standby, 'SELECT pg_reload_conf()');
    },
    async rejoinAsStandby(node, newPrimary) {
      if (running.has(node.name)) throw new Error(`${node.name} is running: stop it first`);
      writeFileSync(join(dir(node), 'standby.signal'), '');
      // postgresql.auto.conf is where ALTER SYSTEM writes, and what -R wrote for the standbys: the last setting wins.
      appendFileSync(join(dir(node), 'postgresql.auto.conf'), `primary_conninfo = '${conninfo(newPrimary)}'\nsynchronous_standby_names = ''\n`);
      if ('uid' in owner) for (const file of ['standby.signal', 'postgresql.auto.conf']) chownSync(join(dir(node), file), owner.uid, owner.gid);
      await start(node);
    },
    async synchronous(on, names) {
      const list = names.map((node) => node.name).join(', ');
      await query(on, `ALTER SYSTEM SET synchronous_standby_names = '${names.length > 0 ? `FIRST ${names.length} (${list})` : ''}'`);
      await query(on, 'SELECT pg_reload_conf()');
    },
    async inRecovery(node) {
      return (await query<{ standby: boolean }>(node, 'SELECT pg_is_in_recovery() AS standby'))[0].standby;
    },
    async caughtUp(standby, of, timeoutMs = 30_000) {
      const [{ lsn }] = await query<{ lsn: string }>(of, 'SELECT pg_current_wal_flush_lsn()::text AS lsn');
      await waitFor(
        `${standby.name} to replay ${of.name}'s WAL up to ${lsn}`,
        async () => {
          const [{ behind }] = await query<{ behind: boolean }>(standby, 'SELECT pg_last_wal_replay_lsn() < $1::pg_lsn AS behind', [lsn]);
          return behind ? undefined : true;
        },
        timeoutMs,
        50,
      );
    },
    log(node) {
      const file = logFile(node);
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-40).join('\n') : '';
    },
    async destroy() {
      for (const node of nodes) if (running.has(node.name)) await stopWith(node, 'immediate').catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
  if (options.synchronousStandbys) await cluster.synchronous(primary, standbys.slice(0, options.synchronousStandbys));
  return cluster;
}
