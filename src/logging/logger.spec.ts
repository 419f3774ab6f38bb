import pino from 'pino';
import { lazyRequestLogger } from './logger';

describe('lazyRequestLogger', () => {
  const capture = () => {
    const lines: Array<Record<string, unknown>> = [];
    const root = pino(
      { level: 'info', base: null, timestamp: false },
      { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    return { root, lines };
  };

  it('makes no child until something logs through it', () => {
    const { root } = capture();
    const child = jest.spyOn(root, 'child');
    lazyRequestLogger(root, { requestId: 'r-1' }, {});
    expect(child).not.toHaveBeenCalled();
  });

  it('writes what the child pino would, with the request id bound, in every call shape', () => {
    const { root, lines } = capture();
    const logger = lazyRequestLogger(root, { requestId: 'r-1' }, {});
    logger.error({ err: new Error('boom') }, 'failed %s', 'here');
    logger.warn('plain');
    logger.info({ a: 1 });
    logger.debug('below the level');
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, requestId: 'r-1', msg: 'failed here', err: expect.objectContaining({ message: 'boom' }) }),
      { level: 40, requestId: 'r-1', msg: 'plain' },
      { level: 30, requestId: 'r-1', a: 1 },
    ]);
    expect(logger.level).toBe('info');
    logger.child({ more: true }).info('nested');
    expect(lines.at(-1)).toEqual({ level: 30, requestId: 'r-1', more: true, msg: 'nested' });
  });
});
