import type { ChangePageRead, ChangeRow } from './change.repository';
import { ChangeTail, TailOutcome, TailRequest } from './change-tail';

/** A feed in memory: what ChangeRepository.page answers unfiltered (dense positions from 1), counting its reads. */
class FakeFeed {
  readonly rows: ChangeRow[] = [];
  reads = 0;
  /** What the database answers: all rows, or (a replica behind) only up to this position. */
  visibleUpTo = Infinity;
  failWith: Error | undefined;
  failures = 0;
  /** While set, a read waits for it before it looks (a slow statement). */
  gate: Promise<void> | undefined;

  add(type = 'post.changed', profileIds: string[] = []): string {
    const position = String(this.rows.length + 1);
    this.rows.push({
      position,
      workspace_id: 'default',
      type,
      resource_id: `r${position}`,
      sequence: 1,
      changed_at: new Date(0),
      data: { n: position },
      profile_ids: profileIds,
      platforms: [],
    });
    return position;
  }

  read = async (after: string, limit: number): Promise<ChangePageRead> => {
    this.reads += 1;
    await new Promise((resolve) => setImmediate(resolve));
    await this.gate;
    if (this.failWith) {
      this.failures += 1;
      throw this.failWith;
    }
    const visible = this.rows.filter((row) => Number(row.position) <= this.visibleUpTo);
    const rows = visible.filter((row) => Number(row.position) > Number(after) && Number(row.position) <= Number(after) + limit).slice(0, limit);
    return { rows, oldest: visible[0]?.position ?? null, newest: visible[visible.length - 1]?.position ?? null };
  };
}

const request = (after: string, overrides: Partial<TailRequest> = {}): TailRequest => ({
  after,
  limit: 100,
  scan: 100,
  filter: {},
  deadline: Date.now() + 5_000,
  ...overrides,
});

const cursors = (outcome: TailOutcome) => (outcome.kind === 'page' ? outcome.page.data.map((item) => item.cursor) : outcome.kind);

describe('ChangeTail: one reader for every long poll at the head', () => {
  let feed: FakeFeed;
  let tail: ChangeTail;

  beforeEach(() => {
    feed = new FakeFeed();
    feed.add();
    feed.add();
    tail = new ChangeTail(feed.read);
  });

  afterEach(() => tail.release());

  it('answers a hundred readers at the head from one read per announcement, and nothing for an announcement already read', async () => {
    const waiting = Array.from({ length: 100 }, (_, i) =>
      tail.wait(request('2', i % 2 === 0 ? {} : { filter: { types: ['post.deleted'] }, scan: 10_000 }), {
        oldest: '1',
        newest: '2',
        at: Date.now(),
      }),
    );
    expect(tail.size).toBe(100);
    expect(feed.reads).toBe(0);
    const third = feed.add();
    tail.wake(third);
    // This process's sequencer and the NOTIFY both announce it: the second costs nothing.
    tail.wake(third);
    const unfiltered = await Promise.all(waiting.filter((_, i) => i % 2 === 0));
    expect(unfiltered.map(cursors)).toEqual(unfiltered.map(() => ['3']));
    expect(feed.reads).toBe(1);
    // The filtered ones wait on, their cursors past what they skipped.
    expect(tail.size).toBe(50);
    const deleted = feed.add('post.deleted');
    tail.wake(deleted);
    expect((await Promise.all(waiting.filter((_, i) => i % 2 === 1))).map(cursors)).toEqual(unfiltered.map(() => ['4']));
    expect(feed.reads).toBe(2);
  });

  it('answers readers coming back behind the newest read from the entries it keeps, with one fresh read for all of them', async () => {
    const first = tail.wait(request('2'), { oldest: '1', newest: '2', at: Date.now() });
    tail.wake(feed.add());
    expect(cursors(await first)).toEqual(['3']);
    const other = tail.wait(request('3'));
    tail.wake(feed.add());
    expect(cursors(await other)).toEqual(['4']);
    const reads = feed.reads;
    // Twenty readers come back with the cursor of their last answer, 3, though entry 4 was read meanwhile.
    expect(tail.covers('3')).toBe(true);
    const back = await Promise.all(Array.from({ length: 20 }, () => tail.wait(request('3'))));
    expect(back.map(cursors)).toEqual(back.map(() => ['4']));
    expect(feed.reads).toBe(reads + 1);
    // That read brings the feed's bounds as of then: a cursor retention has passed since is refused, not answered from memory.
    feed.rows.splice(0, 3);
    const expired = await tail.wait(request('2'));
    expect(expired).toMatchObject({ kind: 'failed', error: { status: 410, code: 'cursor_expired' } });
  });

  it('never joins a read begun past the head of the reader that started the tail again meanwhile', async () => {
    // The tail reads up to 3, then a reader waits at 3 while the read for 4 is slow.
    const first = tail.wait(request('2'), { oldest: '1', newest: '2', at: Date.now() });
    tail.wake(feed.add());
    expect(cursors(await first)).toEqual(['3']);
    let open = () => undefined as void;
    feed.gate = new Promise<void>((resolve) => (open = resolve));
    const short = tail.wait(request('3', { deadline: Date.now() + 500 }));
    const reads = feed.reads;
    tail.wake(feed.add());
    while (feed.reads === reads) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(cursors(await short)).toEqual([]);
    // Nobody waits and it read over RECHECK_MS ago: the tail is idle, its read for 4 still out.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(tail.covers('3')).toBe(false);
    // A reader whose own (slow, shared) read saw the feed end at 2 starts it again from there.
    const late = tail.wait(request('2'), { oldest: '1', newest: '2', at: Date.now() - 1_500 });
    feed.gate = undefined;
    open();
    expect(cursors(await late)).toEqual(['3', '4']);
  });

  it('looks again every 50 ms for an announced position a replica has not replayed yet', async () => {
    feed.visibleUpTo = 2;
    const waiting = tail.wait(request('2'), { oldest: '1', newest: '2', at: Date.now() });
    const announced = Date.now();
    tail.wake(feed.add());
    // Five looks, none finding it yet: at one a second that would take 4 s, at one every 50 ms a quarter of that.
    while (feed.reads < 5 && Date.now() - announced < 2_500) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(feed.reads).toBeGreaterThanOrEqual(5);
    expect(tail.size).toBe(1);
    feed.visibleUpTo = Infinity;
    expect(cursors(await waiting)).toEqual(['3']);
  });

  it('answers empty at the deadline with the cursor moved past what the filter skipped, and on release', async () => {
    const filtered = tail.wait(request('2', { filter: { profileId: 'p-nobody' }, scan: 10_000, deadline: Date.now() + 200 }), {
      oldest: '1',
      newest: '2',
      at: Date.now(),
    });
    tail.wake(feed.add());
    expect(await filtered).toEqual({ kind: 'page', page: { data: [], nextCursor: '3' } });
    const held = tail.wait(request('3'), { oldest: '1', newest: '3', at: Date.now() });
    tail.release();
    expect(await held).toEqual({ kind: 'page', page: { data: [], nextCursor: '3' } });
  });

  it('hands a read failure to every waiting reader, and sends a reader behind what it keeps to read for itself', async () => {
    const a = tail.wait(request('2'), { oldest: '1', newest: '2', at: Date.now() });
    const b = tail.wait(request('2', { limit: 1 }));
    feed.failWith = new Error('connection refused');
    tail.wake(feed.add());
    expect(await a).toEqual({ kind: 'failed', error: feed.failWith });
    expect(await b).toEqual({ kind: 'failed', error: feed.failWith });
    // A cursor before what the tail keeps: it reads for itself.
    expect(await tail.wait(request('0'))).toEqual({ kind: 'behind', after: '0' });
  });

  it('keeps its readers waiting while no connection comes for its read, and answers them once one does', async () => {
    const waiting = tail.wait(request('2'), { oldest: '1', newest: '2', at: Date.now() });
    feed.failWith = new Error('timeout exceeded when trying to connect');
    tail.wake(feed.add());
    // Its read has failed for want of a connection.
    while (feed.failures === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    feed.failWith = undefined;
    // Its next look, a second on, finds the connection and the entry.
    expect(cursors(await waiting)).toEqual(['3']);
  });
});
