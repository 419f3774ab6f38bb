import { setFlagsFromString } from 'node:v8';
import { AppConfig } from '../config/app-config';
import { TightHeap } from './tight-heap';

jest.mock('node:v8', () => ({ setFlagsFromString: jest.fn() }));
const setFlags = jest.mocked(setFlagsFromString);

const config = (percent?: string) =>
  AppConfig.fromEnvironment({
    POZY_API_KEY: 'sk_test',
    DATABASE_URL: 'postgresql://localhost/x',
    ...(percent === undefined ? {} : { HEAP_GROWTH_PERCENT: percent }),
  });

/** A TightHeap as the application made it (tight while it started), once started. */
const heap = (percent?: string) => {
  const tight = new TightHeap(config(percent));
  tight.onApplicationBootstrap();
  setFlags.mockClear();
  return tight;
};

/** A run the test ends when it wants. */
function run() {
  let end!: (failure?: Error) => void;
  const work = () => new Promise<string>((resolve, reject) => (end = (failure) => (failure ? reject(failure) : resolve('done'))));
  return { work, end: (failure?: Error) => end(failure) };
}

describe('TightHeap: the heap kept tight while runs go on, V8 left to itself otherwise', () => {
  beforeEach(() => setFlags.mockClear());

  it('is tight while the application starts, then leaves V8 its own rule', () => {
    const tight = new TightHeap(config());
    expect(setFlags.mock.calls).toEqual([['--heap-growing-percent=50']]);
    tight.onApplicationBootstrap();
    expect(setFlags.mock.calls).toEqual([['--heap-growing-percent=50'], ['--heap-growing-percent=0']]);
  });

  it('tightens when the first run starts and gives V8 its own rule back when the last one ends, not before', async () => {
    const tight = heap();
    const first = run();
    const second = run();
    const firstDone = tight.during(first.work);
    const secondDone = tight.during(second.work);
    expect(setFlags.mock.calls).toEqual([['--heap-growing-percent=50']]);
    first.end();
    await expect(firstDone).resolves.toBe('done');
    expect(setFlags.mock.calls).toEqual([['--heap-growing-percent=50']]);
    second.end();
    await expect(secondDone).resolves.toBe('done');
    expect(setFlags.mock.calls).toEqual([['--heap-growing-percent=50'], ['--heap-growing-percent=0']]);
  });

  it('gives the rule back when a run fails, and passes its failure on', async () => {
    const tight = heap('120');
    const failing = run();
    const done = tight.during(failing.work);
    failing.end(new Error('Pozy refused'));
    await expect(done).rejects.toThrow('Pozy refused');
    expect(setFlags.mock.calls).toEqual([['--heap-growing-percent=120'], ['--heap-growing-percent=0']]);
  });

  it('never touches V8 with HEAP_GROWTH_PERCENT=0', async () => {
    const tight = heap('0');
    const plain = run();
    const done = tight.during(plain.work);
    plain.end();
    await expect(done).resolves.toBe('done');
    expect(setFlags).not.toHaveBeenCalled();
  });
});
