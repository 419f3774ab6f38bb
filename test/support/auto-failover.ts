import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './ports';
import { waitFor } from './service';
import { postgresBinDir, runAs } from './streaming-replica';

const run = promisify(execFile);

/** A data node of the formation. */
export interface AutoFailoverNode {
  /** Its pg_auto_failover name: `node1` (the first primary) or `node2`. */
  name: string;
  port: number;
  /** A plain single-host URL to this node, as `postgres`. */
  url(database: string): string;
}

/** A pg_auto_failover monitor and two PostgreSQL nodes (a primary and its synchronous secondary) on loopback. */
export interface AutoFailoverFormation {
  /**
   * The formation's multi-host URL as `pg_autoctl show uri --formation default` prints it, for `database`:
   * `postgres://127.0.0.1:p1,127.0.0.1:p2/<database>?target_session_attrs=read-write&sslmode=disable`. It names no
   * user (libpq then takes the OS user's name); `user` puts one in. libpq's form: node-postgres cannot parse it.
   */
  uri(database: string, user?: string): string;
  /** The monitor's own URL, as `pg_autoctl show uri` prints it (user `autoctl_node`, database `pg_auto_failover`). */
  monitorUri(): string;
  nodes(): AutoFailoverNode[];
  /** The node the monitor has as the writable primary now (waits out a transition, up to the formation's deadline). */
  primary(): Promise<AutoFailoverNode>;
  /** `pg_autoctl perform failover`, then waits until the other node is primary and the old one its secondary. */
  failover(): Promise<AutoFailoverNode>;
  /** CREATE DATABASE on the primary; physical replication takes it to the secondary. */
  createDatabase(name: string): Promise<void>;
  /** The tail of each pg_autoctl's output, for a failure's report. */
  log(): string;
  /** Stops every pg_autoctl and the servers they run, checks none of their processes is left, removes the directory. */
  stop(): Promise<void>;
}

export interface AutoFailoverOptions {
  /** PostgreSQL's binaries, the installation pgautofailover.so is built for; default: autoFailoverBinDir(). */
  bin?: string;
  /** The most any one step (start, failover, stop) may take. */
  timeoutMs?: number;
  /** Monitor settings over the fast ones below, e.g. `{ 'pgautofailover.node_considered_unhealthy_timeout': '20000' }`. */
  monitorSettings?: Record<string, string>;
}

/**
 * The monitor's timers, shortened (defaults in brackets) so that a node that dies is noticed within seconds: the
 * monitor checks each node every second and calls it unhealthy once it fails a check and its keeper has been silent
 * 5 s. Keepers report every second, so a busy machine does not make a live node look dead. A planned failover does not
 * wait on these: the keepers' own 1 s loop (not configurable) paces it.
 */
const FAST_MONITOR: Record<string, string> = {
  'pgautofailover.health_check_period': '1000', // [5000]
  'pgautofailover.health_check_timeout': '1000', // [5000], connect timeout
  'pgautofailover.health_check_max_retries': '1', // [2]
  'pgautofailover.health_check_retry_delay': '500', // [2000]
  'pgautofailover.node_considered_unhealthy_timeout': '5000', // [20000]
  'pgautofailover.startup_grace_period': '2000', // [10000]
  'pgautofailover.primary_demote_timeout': '5000', // [30000]
};

const PG_AUTOCTL = ['/usr/bin/pg_autoctl', '/usr/local/bin/pg_autoctl'].find((path) => existsSync(path)) ?? 'pg_autoctl';
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/** A PostgreSQL bin dir whose installation has the monitor's extension (pgautofailover.so) and pg_autoctl, if any. */
export function autoFailoverBinDir(): string | undefined {
  const bin = postgresBinDir();
  if (!bin) return undefined;
  try {
    execFileSync(PG_AUTOCTL, ['--version'], { stdio: 'ignore' });
    const lib = execFileSync(join(bin, 'pg_config'), ['--pkglibdir'], { encoding: 'utf8' }).trim();
    return existsSync(join(lib, 'pgautofailover.so')) ? bin : undefined;
  } catch {
    return undefined;
  }
}

interface Keeper {
  name: string;
  pgdata: string;
  port: number;
  logFile: string;
  child: ChildProcess;
  exited: Promise<void>;
}

interface NodeRow {
  name: string;
  port: number;
  reportedstate: string;
  goalstate: string;
}

const WRITABLE = ['single', 'wait_primary', 'primary'];

/** An error that already carries the tail of the pg_autoctl logs. */
class FormationError extends Error {}

/** Processes whose working directory (every PostgreSQL process: the data directory) or command line is under `root`. */
function processesUnder(root: string): number[] {
  if (!existsSync('/proc')) return [];
  const under = (path: string) => path === root || path.includes(`${root}/`);
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (under(readlinkSync(`/proc/${entry}/cwd`)) || under(readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ')))
        pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or another user's.
    }
  }
  return pids;
}

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/**
 * A monitor and two nodes, each a foreground `pg_autoctl ... --run` (its supervisor, services and postmaster in one
 * process group), run as `postgres` when the test runs as root, in a temporary directory, on free loopback ports. The
 * first node registers alone and becomes primary; the second is then cloned from it and becomes its secondary.
 */
export async function startAutoFailoverFormation(options: AutoFailoverOptions = {}): Promise<AutoFailoverFormation> {
  const bin = options.bin ?? autoFailoverBinDir();
  if (!bin) throw new Error('No pg_auto_failover (pg_autoctl and the pgautofailover extension): apt-get install postgresql-15-auto-failover');
  const timeoutMs = options.timeoutMs ?? 60_000;
  const owner = runAs();
  const root = mkdtempSync(join(tmpdir(), 'pozy-autofailover-'));
  const own = (path: string) => {
    mkdirSync(path, { recursive: true });
    if ('uid' in owner) chownSync(path, owner.uid, owner.gid);
  };
  own(root);
  const sockets = join(root, 'sockets');
  own(sockets);

  // Its own config, state and pid file (XDG_*) for each pg_autoctl, so that they never collide. PG_AUTOCTL_DEBUG with
  // PG_REGRESS_SOCK_DIR is pg_auto_failover's own test-suite mode: unix sockets in our directory (-k), not
  // /var/run/postgresql, and PostgreSQL's default memory settings rather than ones sized for the whole machine (a quarter
  // of the RAM for shared_buffers, each). Nothing of the test's environment (PGPORT, PGHOST...) leaks in.
  const env = (name: string): NodeJS.ProcessEnv => ({
    PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: root,
    LC_ALL: 'C',
    XDG_CONFIG_HOME: join(root, name, 'config'),
    XDG_DATA_HOME: join(root, name, 'share'),
    XDG_RUNTIME_DIR: join(root, name, 'run'),
    PGHOST: sockets,
    PG_REGRESS_SOCK_DIR: sockets,
    PG_AUTOCTL_DEBUG: '1',
  });
  const pgautoctl = (name: string, args: string[], timeout = timeoutMs) =>
    run(PG_AUTOCTL, args, { ...owner, cwd: root, env: env(name), timeout, killSignal: 'SIGKILL' });

  const keepers: Keeper[] = [];
  const tail = (keeper: Keeper, lines = 30) =>
    existsSync(keeper.logFile) ? readFileSync(keeper.logFile, 'utf8').split('\n').slice(-lines).join('\n') : '';
  const log = () => keepers.map((keeper) => `--- pg_autoctl ${keeper.name} (${keeper.logFile}) ---\n${tail(keeper)}`).join('\n');
  const failure = (what: string, cause?: unknown) =>
    cause instanceof FormationError ? cause : new FormationError(`${what}${cause instanceof Error ? `: ${cause.message}` : ''}\n${log()}`);
  // A check that fails at once, with the logs, when a pg_autoctl has exited (a port taken, a bad option...).
  const checking =
    <T>(check: () => Promise<T | undefined>) =>
    async () => {
      const dead = keepers.find((keeper) => !alive(keeper.child));
      if (dead) throw failure(`pg_autoctl ${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode})`);
      return check();
    };
  const waitUntil = async <T>(what: string, check: () => Promise<T | undefined>) => {
    try {
      return await waitFor(what, checking(check), timeoutMs, 100);
    } catch (error) {
      throw failure(`waiting for ${what}`, error);
    }
  };

  const keep = (name: string, port: number, args: string[]): Keeper => {
    for (const dir of ['', 'config', 'share', 'run']) own(join(root, name, dir));
    const pgdata = join(root, name, 'pgdata');
    const logFile = join(root, `${name}.log`);
    const fd = openSync(logFile, 'a');
    // Trust, no TLS (sslmode=disable in the URIs, which node-postgres reads as "no TLS"; its `prefer` means
    // verify-full), loopback only.
    const common = ['--pgctl', join(bin, 'pg_ctl'), '--pgdata', pgdata, '--pgport', String(port), '--hostname', '127.0.0.1'];
    const network = ['--listen', '127.0.0.1', '--auth', 'trust', '--no-ssl', '--ssl-mode', 'disable', '--run'];
    // setpriv --pdeathsig: a Jest worker that dies without stop() (a crash, a timeout) still takes the formation with it,
    // pg_autoctl shutting down on that SIGTERM; Jest's sandboxed `process` never runs 'exit' handlers.
    const [command, prefix] = SETPRIV ? [SETPRIV, ['--pdeathsig', 'TERM', '--', PG_AUTOCTL]] : [PG_AUTOCTL, []];
    // Detached: its own process group, which a last-resort SIGKILL reaches whole (PostgreSQL's backends, in sessions of
    // their own, exit once their postmaster is gone).
    const child = spawn(command, [...prefix, ...args, ...common, ...network], {
      ...owner,
      cwd: root,
      env: env(name),
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    closeSync(fd);
    // A forgotten stop() must not keep Jest's worker alive.
    child.unref();
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', () => resolve());
    });
    const keeper = { name, pgdata, port, logFile, child, exited };
    keepers.push(keeper);
    return keeper;
  };
  const killGroup = (keeper: Keeper) => {
    try {
      if (keeper.child.pid) process.kill(-keeper.child.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  };

  const query = async <R extends object>(port: number, database: string, text: string, values: unknown[] = []): Promise<R[]> => {
    const client = new Client({ host: '127.0.0.1', port, user: 'postgres', database, connectionTimeoutMillis: 5_000 });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  const [monitorPort, port1, port2] = [await freePort(), await freePort(), await freePort()];
  const monitorQuery = <R extends object>(text: string, values: unknown[] = []) => query<R>(monitorPort, 'pg_auto_failover', text, values);
  const states = () =>
    monitorQuery<NodeRow>(
      `SELECT nodename AS name, nodeport AS port, reportedstate::text, goalstate::text
         FROM pgautofailover.node WHERE formationid = 'default' ORDER BY nodeid`,
    ).catch(() => undefined);
  const settled = (rows: NodeRow[] | undefined, primary: string, secondary: string) => {
    const state = (name: string) => rows?.find((row) => row.name === name);
    const [p, s] = [state(primary), state(secondary)];
    return p?.reportedstate === 'primary' && p.goalstate === 'primary' && s?.reportedstate === 'secondary' && s.goalstate === 'secondary';
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // SIGTERM to each supervisor: it stops its services, PostgreSQL with a fast shutdown. The nodes first, so that
    // their keepers do not spend their last moments retrying a monitor that is gone.
    const end = async (group: Keeper[]) => {
      for (const keeper of group) if (alive(keeper.child)) keeper.child.kill('SIGTERM');
      const deadline = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), timeoutMs).unref());
      await Promise.all(
        group.map(async (keeper) => {
          if ((await Promise.race([keeper.exited, deadline])) === 'late') {
            killGroup(keeper);
            await keeper.exited;
          }
        }),
      );
    };
    await end(keepers.filter((keeper) => keeper.name !== 'monitor'));
    await end(keepers.filter((keeper) => keeper.name === 'monitor'));
    // Backends outlive a killed postmaster for a moment; anything still there after the deadline is killed.
    const left = await waitFor(
      'the formation processes to exit',
      async () => (processesUnder(root).length === 0 ? true : undefined),
      timeoutMs,
      100,
    ).catch(() => false);
    if (!left) {
      const stragglers = processesUnder(root);
      for (const pid of stragglers) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
      await waitFor(`processes ${stragglers.join(', ')} to die`, async () => (processesUnder(root).length === 0 ? true : undefined), 10_000, 100);
    }
    rmSync(root, { recursive: true, force: true });
  };

  const node = (row: { name: string; port: number }): AutoFailoverNode => ({
    name: row.name,
    port: row.port,
    url: (database) => `postgresql://postgres@127.0.0.1:${row.port}/${database}`,
  });

  let formationUri: string;
  let monitorUri: string;
  try {
    keep('monitor', monitorPort, ['create', 'monitor']);
    await waitUntil('the monitor', async () => {
      const rows = await monitorQuery("SELECT 1 FROM pg_extension WHERE extname = 'pgautofailover'").catch(() => []);
      return rows.length > 0 ? true : undefined;
    });
    // SIGHUP settings, so a reload applies them; the monitor's data is thrown away too.
    for (const [name, value] of Object.entries({ ...FAST_MONITOR, fsync: 'off', ...options.monitorSettings })) {
      await monitorQuery(`ALTER SYSTEM SET ${name} = '${value.replace(/'/g, "''")}'`);
    }
    await monitorQuery('SELECT pg_reload_conf()');

    const monitorArg = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
    // Both may be promoted (priority 50) and both count for synchronous replication (quorum): the defaults, spelled out.
    const candidate = ['--candidate-priority', '50', '--replication-quorum', 'true'];
    const dataNode = (name: string, port: number) =>
      keep(name, port, ['create', 'postgres', '--name', name, '--pghost', sockets, '--monitor', monitorArg, ...candidate]);
    dataNode('node1', port1);
    await waitUntil('node1 to run as a single node', async () => {
      const rows = await states();
      return rows?.some((row) => row.name === 'node1' && row.reportedstate === 'single' && row.goalstate === 'single') ? true : undefined;
    });
    // No fsync (the data is thrown away): in postgresql.auto.conf, which pg_basebackup copies to the secondary. The
    // checkpoint now leaves the one pg_basebackup asks for (a spread one: pg_autoctl does not pass --checkpoint=fast)
    // next to nothing to write, which saves seconds.
    await query(port1, 'postgres', 'ALTER SYSTEM SET fsync = off');
    await query(port1, 'postgres', 'SELECT pg_reload_conf()');
    await query(port1, 'postgres', 'CHECKPOINT');
    dataNode('node2', port2);
    await waitUntil('node1 primary and node2 its secondary', async () => (settled(await states(), 'node1', 'node2') ? true : undefined));

    const { stdout } = await pgautoctl('monitor', ['show', 'uri', '--pgdata', join(root, 'monitor', 'pgdata'), '--json']);
    const uris = JSON.parse(stdout) as { uri: string; name: string; type: string }[];
    const uriOf = (type: string) => {
      const found = uris.find((entry) => entry.type === type && (type !== 'formation' || entry.name === 'default'));
      if (!found) throw new Error(`pg_autoctl show uri printed no ${type} URI: ${stdout}`);
      return found.uri;
    };
    formationUri = uriOf('formation');
    monitorUri = uriOf('monitor');
  } catch (error) {
    const report = failure('starting the pg_auto_failover formation', error);
    await stop().catch(() => undefined);
    throw report;
  }

  const nodes = [node({ name: 'node1', port: port1 }), node({ name: 'node2', port: port2 })];
  const primary = () =>
    waitUntil('a writable primary', async () => {
      const found = (await states())?.find((row) => WRITABLE.includes(row.reportedstate) && row.goalstate === row.reportedstate);
      return found ? nodes.find((candidate) => candidate.name === found.name) : undefined;
    });

  return {
    uri(database, user) {
      // By hand: WHATWG URL (and so node-postgres) refuses `host:port,host:port` as a host.
      const parts = /^([a-z]+:\/\/)([^/@]*@)?([^/]*)\/[^?]*(\?.*)?$/.exec(formationUri);
      if (!parts) throw new Error(`unexpected formation URI ${formationUri}`);
      const [, scheme, printedUser = '', hosts, search = ''] = parts;
      return `${scheme}${user === undefined ? printedUser : `${encodeURIComponent(user)}@`}${hosts}/${encodeURIComponent(database)}${search}`;
    },
    monitorUri: () => monitorUri,
    nodes: () => nodes,
    primary,
    async failover() {
      const before = await primary();
      const other = nodes.find((candidate) => candidate !== before);
      if (!other) throw new Error('no secondary');
      const wait = Math.ceil(timeoutMs / 1000);
      // It returns once the monitor has the new primary; the group settled is checked below, not taken on its word.
      await pgautoctl(
        'monitor',
        ['perform', 'failover', '--pgdata', join(root, 'monitor', 'pgdata'), '--wait', String(wait)],
        timeoutMs + 5_000,
      ).catch((error: unknown) => {
        const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
        throw failure(`pg_autoctl perform failover\n${stdout}${stderr}`, error);
      });
      await waitUntil(`${other.name} primary and ${before.name} its secondary`, async () =>
        settled(await states(), other.name, before.name) ? true : undefined,
      );
      return other;
    },
    async createDatabase(name) {
      const on = await primary();
      await query(on.port, 'postgres', `CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    },
    log,
    stop,
  };
}
