import { formatTraceparent, linksTo, parseTraceparent } from './trace-context';
import { Tracing } from './tracing.service';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('W3C trace context', () => {
  it('reads a traceparent, and writes it back as it was', () => {
    const parsed = parseTraceparent(`00-${TRACE}-${SPAN}-01`);
    expect(parsed).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    expect(formatTraceparent(parsed!)).toBe(`00-${TRACE}-${SPAN}-01`);
    expect(formatTraceparent(parseTraceparent(`00-${TRACE}-${SPAN}-00`)!)).toBe(`00-${TRACE}-${SPAN}-00`);
  });

  it.each([
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['another version', `01-${TRACE}-${SPAN}-01`],
    ['a short id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['two headers', [`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-01`]],
  ])('ignores %s', (_name, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('links to the stored contexts it can read, skipping the rest', () => {
    expect(linksTo([`00-${TRACE}-${SPAN}-01`, null, 'garbage'])).toEqual([{ context: expect.objectContaining({ traceId: TRACE, spanId: SPAN }) }]);
  });
});

describe('Tracing, off', () => {
  it('runs the function with a span that records nothing, and passes its result and its error through', async () => {
    const tracing = Tracing.off();
    expect(tracing.enabled).toBe(false);
    await expect(tracing.span('x', {}, async (span) => span.isRecording())).resolves.toBe(false);
    await expect(
      tracing.span('x', {}, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
  });
});
