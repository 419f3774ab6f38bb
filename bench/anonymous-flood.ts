/**
 * An anonymous client flooding a pozy-sync service with reads, in a process of its own so that its thousands of
 * requests do not share the service's event loop: long polls of the change feed (each following its answers'
 * `nextCursor`, as a consumer does, and asking again at once), status pages, and search queries, each kind by its
 * own number of loops, none of them waiting between requests.
 *
 * Run with child_process.fork (test/anonymous-load.e2e-spec.ts does): it takes `FloodCommand`s and answers a
 * `FloodTally` when told to stop.
 */
import { Agent, fetch } from 'undici';

export interface FloodCommand {
  /** Starts `loops` loops asking `paths` in turn (`{cursor}` in a path is the loop's cursor, moved by each answer). */
  start?: { kind: string; loops: number; paths: string[]; cursor?: string };
  /** Aborts every request in flight and answers the tally. */
  stop?: true;
}

export interface FloodTally {
  /** Per kind: answers by status and error code (`503 overloaded`); `0` for a request that got no answer. */
  statuses: Record<string, Record<string, number>>;
  /** Answers that were neither a 2xx nor a clear refusal (a 4xx or a 503 whose JSON body names its `error`). */
  unclear: string[];
}

interface Answer {
  status: number;
  json: boolean;
  text: string;
}

const baseUrl = process.argv[2];
// One connection per loop, as that many clients would open: undici's default pool is unbounded too, said here.
const dispatcher = new Agent({ connections: null, keepAliveTimeout: 60_000 });
const inFlight = new Set<AbortController>();
const tally: FloodTally = { statuses: {}, unclear: [] };
const loops: Promise<void>[] = [];
let stopped = false;

async function ask(path: string): Promise<Answer | undefined> {
  const controller = new AbortController();
  inFlight.add(controller);
  try {
    const response = await fetch(`${baseUrl}${path}`, { signal: controller.signal, dispatcher });
    const json = response.headers.get('content-type')?.startsWith('application/json') ?? false;
    return { status: response.status, json, text: await response.text() };
  } catch (error) {
    return controller.signal.aborted ? undefined : { status: 0, json: false, text: (error as Error).message };
  } finally {
    inFlight.delete(controller);
  }
}

function count(kind: string, path: string, answer: Answer): unknown {
  let body: unknown;
  if (answer.json) {
    try {
      body = JSON.parse(answer.text);
    } catch {
      body = undefined;
    }
  }
  const ok = answer.status >= 200 && answer.status < 300;
  const error = ok ? undefined : (body as { error?: unknown } | undefined)?.error;
  const key = typeof error === 'string' ? `${answer.status} ${error}` : String(answer.status);
  const statuses = (tally.statuses[kind] ??= {});
  statuses[key] = (statuses[key] ?? 0) + 1;
  const clear = typeof error === 'string' && (answer.status < 500 || answer.status === 503);
  if (!ok && !clear) tally.unclear.push(`${answer.status} ${path}: ${answer.text.slice(0, 200)}`);
  return ok ? body : undefined;
}

async function loop(kind: string, index: number, paths: string[], start: string | undefined): Promise<void> {
  let cursor = start;
  for (let i = 0; !stopped; i++) {
    // A loop that follows a cursor keeps to its one path (its filter); the others go round them all.
    const path = (start === undefined ? paths[(index + i) % paths.length] : paths[index % paths.length]).replace('{cursor}', cursor ?? '');
    const answer = await ask(path);
    if (answer === undefined) return;
    const body = count(kind, path, answer) as { nextCursor?: unknown } | undefined;
    if (typeof body?.nextCursor === 'string') cursor = body.nextCursor;
  }
}

process.on('message', (command: FloodCommand) => {
  if (command.start) {
    const { kind, loops: n, paths, cursor } = command.start;
    for (let i = 0; i < n; i++) loops.push(loop(kind, i, paths, cursor));
  }
  if (command.stop) {
    stopped = true;
    for (const controller of inFlight) controller.abort();
    void Promise.all(loops)
      .then(() => dispatcher.close())
      .then(() => process.send?.(tally, () => process.exit(0)));
  }
});
