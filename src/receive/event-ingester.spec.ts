import { Logger } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import type { AppConfig } from '../config/app-config';
import type { AckSpool } from './ack-spool';
import { EventIngester, StoreOutcome } from './event-ingester';
import { type BatchOutcome, eventKey, type NewPozyEvent, type PozyEventRepository } from './pozy-event.repository';
import { ReconcileSignal } from './reconcile-signal';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';

const DUE_AT = new Date('2026-11-30T12:00:01Z');

/**
 * The receive statement, in process: each call is one statement over a set of stored ids, atomic as PostgreSQL's is
 * (an event whose payload jsonb would refuse fails the whole statement with SQLSTATE 22P05, storing nothing).
 * `hold()` keeps statements in flight until `release()`; `failures` makes a statement (by its index) fail as a
 * database that does not answer would.
 */
class FakeEventStore implements Pick<PozyEventRepository, 'insertBatch'> {
  readonly stored = new Set<string>();
  readonly statements: string[][] = [];
  readonly failures = new Map<number, Error>();
  inFlight = 0;
  mostInFlight = 0;
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;

  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.gate = undefined;
    this.open?.();
  }

  async insertBatch(events: readonly NewPozyEvent[]): Promise<BatchOutcome> {
    const index = this.statements.push(events.map((e) => e.id)) - 1;
    this.inFlight += 1;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    try {
      if (this.gate) await this.gate;
      const failure = this.failures.get(index);
      if (failure) throw failure;
      if (events.some((e) => e.payloadJson.includes('\\u0000'))) {
        throw Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });
      }
      const inserted = new Set<string>();
      for (const event of events) {
        if (this.stored.has(event.id)) continue;
        this.stored.add(event.id);
        inserted.add(eventKey(event));
      }
      const requested = events.some((e) => e.reconcile && inserted.has(eventKey(e)));
      return { inserted, firstRequestDueAt: requested ? DUE_AT : null };
    } finally {
      this.inFlight -= 1;
    }
  }
}

const connectionLost = () => new Error('Connection terminated unexpectedly');

function event(id: string, options: { bad?: boolean; reconcile?: boolean } = {}): NewPozyEvent {
  return {
    workspaceId: DEFAULT_WORKSPACE,
    id,
    type: 'post.published',
    payloadJson: options.bad ? `{"id":"${id}","note":"\\u0000"}` : `{"id":"${id}"}`,
    timestamp: new Date('2026-11-30T11:59:00Z'),
    deliveryId: null,
    attempt: 1,
    test: false,
    reconcile: options.reconcile === false ? null : { key: `post:p-${id}`, type: 'post', id: `p-${id}` },
    recoveredBy: null,
    traceParent: null,
  };
}

function setup(poolSize = 4) {
  const store = new FakeEventStore();
  const spooled: { ids: string[]; cause: unknown }[] = [];
  let spoolBroken = false;
  const spool = {
    add(events: readonly NewPozyEvent[], cause: unknown) {
      if (spoolBroken) throw new Error('SQLITE_FULL: database or disk is full');
      spooled.push({ ids: events.map((e) => e.id), cause });
    },
  };
  // What the dispatcher would hear.
  const reconcileSignal = new ReconcileSignal();
  const dispatcher = { nudge: jest.fn<void, [Date]>() };
  reconcileSignal.subscribe(dispatcher.nudge);
  const config = { databasePoolSize: poolSize, reconcileCoalesceWindowMs: 1_000, ackTimeoutMs: 60_000 } as AppConfig;
  const ingester = new EventIngester(store as unknown as PozyEventRepository, reconcileSignal, spool as unknown as AckSpool, config);
  return { ingester, store, spooled, dispatcher, breakSpool: () => (spoolBroken = true) };
}

/** Lets every settled promise run its callbacks (the fake store has no timers). */
const settle = async () => {
  for (let i = 0; i < 5; i += 1) await new Promise((resolve) => setImmediate(resolve));
};

/** A promise's state, without waiting for it. */
async function state<T>(promise: Promise<T>): Promise<'pending' | 'resolved' | 'rejected'> {
  const marker = Symbol('pending');
  return Promise.race([promise, Promise.resolve(marker)]).then(
    (value) => (value === marker ? 'pending' : 'resolved'),
    () => 'rejected',
  );
}

describe('EventIngester: group commit of received events', () => {
  // The fallback and the spool log what they do; that is not what these tests read.
  beforeEach(() => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });

  afterEach(() => jest.restoreAllMocks());

  it('stores an event alone, at once, when nothing else is in flight', async () => {
    const { ingester, store } = setup();

    await expect(ingester.store(event('a'))).resolves.toBe('stored');

    expect(store.statements).toEqual([['a']]);
  });

  it('answers a delivery only once the statement holding its event has completed', async () => {
    const { ingester, store } = setup();
    store.hold();

    const answer = ingester.store(event('a'));
    await settle();
    expect(await state(answer)).toBe('pending');

    store.release();
    await expect(answer).resolves.toBe('stored');
  });

  it('puts the deliveries that arrive while a statement is in flight into one next statement', async () => {
    const { ingester, store } = setup();
    store.hold();
    const first = ingester.store(event('a'));
    await settle();
    const rest = ['b', 'c', 'd', 'e'].map((id) => ingester.store(event(id)));
    await settle();
    expect(store.statements).toEqual([['a']]);

    store.release();

    await expect(Promise.all([first, ...rest])).resolves.toEqual(['stored', 'stored', 'stored', 'stored', 'stored']);
    expect(store.statements).toEqual([['a'], ['b', 'c', 'd', 'e']]);
  });

  it('holds at most 200 events in a statement', async () => {
    const { ingester, store } = setup();
    store.hold();
    const answers = [ingester.store(event('first'))];
    await settle();
    for (let i = 0; i < 450; i += 1) answers.push(ingester.store(event(`e${i}`)));

    store.release();
    await Promise.all(answers);

    expect(store.statements.map((ids) => ids.length)).toEqual([1, 200, 200, 50]);
    expect(store.stored.size).toBe(451);
  });

  it('starts a second statement only for a whole batch waiting, and keeps at most a quarter of the connection pool busy', async () => {
    const { ingester, store } = setup(12);
    store.hold();
    const answers: Promise<StoreOutcome>[] = [];
    for (let i = 0; i < 199; i += 1) {
      answers.push(ingester.store(event(`e${i}`)));
      await settle();
    }
    // The first went alone; the 198 after it wait for it, less than a batch.
    expect(store.inFlight).toBe(1);
    for (let i = 199; i < 1_000; i += 1) answers.push(ingester.store(event(`e${i}`)));
    await settle();
    expect(store.inFlight).toBe(3);

    store.release();
    await Promise.all(answers);
    expect(store.mostInFlight).toBe(3);
    expect(store.stored.size).toBe(1_000);
  });

  it('stores two deliveries of one event in the same batch once: the first is stored, the other is its duplicate', async () => {
    const { ingester, store } = setup();
    store.hold();
    const first = ingester.store(event('x'));
    await settle();
    const answers = [ingester.store(event('a')), ingester.store(event('a')), ingester.store(event('b'))];

    store.release();

    await expect(first).resolves.toBe('stored');
    await expect(Promise.all(answers)).resolves.toEqual(['stored', 'duplicate', 'stored']);
    expect(store.statements[1]).toEqual(['a', 'b']);
  });

  it('answers an event stored before as a duplicate', async () => {
    const { ingester } = setup();

    await expect(ingester.store(event('a'))).resolves.toBe('stored');
    await expect(ingester.store(event('a'))).resolves.toBe('duplicate');
  });

  it('tells the dispatcher when the first reconcile the statement requested falls due, and only when it requested one', async () => {
    const { ingester, dispatcher } = setup();

    await ingester.store(event('a'));
    expect(dispatcher.nudge).toHaveBeenCalledTimes(1);
    expect(dispatcher.nudge).toHaveBeenCalledWith(DUE_AT);

    await ingester.store(event('a'));
    await ingester.store(event('test', { reconcile: false }));
    expect(dispatcher.nudge).toHaveBeenCalledTimes(1);
  });

  describe('when a statement fails', () => {
    it("retries a batch that failed on one event's data event by event: the others are stored, that one is refused", async () => {
      const { ingester, store, spooled } = setup();
      store.hold();
      const first = ingester.store(event('x'));
      await settle();
      const good1 = ingester.store(event('g1'));
      const bad = ingester.store(event('bad', { bad: true }));
      const good2 = ingester.store(event('g2'));

      store.release();

      await expect(first).resolves.toBe('stored');
      await expect(good1).resolves.toBe('stored');
      await expect(good2).resolves.toBe('stored');
      await expect(bad).rejects.toMatchObject({ code: '22P05' });
      expect(store.statements).toEqual([['x'], ['g1', 'bad', 'g2'], ['g1'], ['bad'], ['g2']]);
      expect([...store.stored]).toEqual(['x', 'g1', 'g2']);
      expect(spooled).toEqual([]);
    });

    it('refuses an event alone whose data the database refuses, without spooling it', async () => {
      const { ingester, store, spooled } = setup();

      await expect(ingester.store(event('bad', { bad: true }))).rejects.toMatchObject({ code: '22P05' });

      expect(store.statements).toEqual([['bad']]);
      expect(spooled).toEqual([]);
    });

    it('spools every event of a batch the database did not acknowledge, and answers each delivery as spooled', async () => {
      const { ingester, store, spooled } = setup();
      store.hold();
      const first = ingester.store(event('x'));
      await settle();
      const lost = connectionLost();
      store.failures.set(1, lost);
      const answers = [ingester.store(event('a')), ingester.store(event('a')), ingester.store(event('b'))];

      store.release();

      await expect(first).resolves.toBe('stored');
      await expect(Promise.all(answers)).resolves.toEqual(['spooled', 'spooled', 'spooled']);
      // One record per event, not per delivery.
      expect(spooled).toEqual([{ ids: ['a', 'b'], cause: lost }]);
    });

    it('spools the rest at once when the database itself fails during the event-by-event retry', async () => {
      const { ingester, store, spooled } = setup();
      store.hold();
      const first = ingester.store(event('x'));
      await settle();
      const lost = connectionLost();
      // Statement 4 is g2's own: the database goes away there.
      store.failures.set(4, lost);
      const answers = ['g1', 'bad', 'g2', 'g3'].map((id) => ingester.store(event(id, { bad: id === 'bad' })));
      const outcomes = answers.map((answer) => answer.catch((error: { code?: string }) => `rejected ${error.code}`));

      store.release();
      await first;

      await expect(Promise.all(outcomes)).resolves.toEqual(['stored', 'rejected 22P05', 'spooled', 'spooled']);
      // g3 waits for no statement of its own once the database has failed.
      expect(store.statements).toEqual([['x'], ['g1', 'bad', 'g2', 'g3'], ['g1'], ['bad'], ['g2']]);
      expect(spooled).toEqual([{ ids: ['g2', 'g3'], cause: lost }]);
    });

    it('refuses the deliveries, with the database error, only when the spool fails too', async () => {
      const { ingester, store, breakSpool } = setup();
      const lost = connectionLost();
      store.failures.set(0, lost);
      breakSpool();

      await expect(ingester.store(event('a'))).rejects.toBe(lost);
    });
  });

  it('sheds load with a 503 once 10,000 deliveries wait for a statement, and stores every one it accepted', async () => {
    const { ingester, store } = setup();
    store.hold();
    const answers = [ingester.store(event('first'))];
    await settle();
    for (let i = 0; i < 10_000; i += 1) answers.push(ingester.store(event(`e${i}`)));

    const refused = ingester.store(event('one-too-many'));
    await expect(refused).rejects.toBeInstanceOf(ApiError);
    await expect(refused).rejects.toMatchObject({ status: 503, code: 'overloaded' });

    store.release();
    const outcomes = await Promise.all(answers);
    expect(outcomes.every((outcome) => outcome === 'stored')).toBe(true);
    expect(store.stored.size).toBe(10_001);
    expect(store.stored.has('one-too-many')).toBe(false);
  });
});
