import { context, Context, Link, ROOT_CONTEXT, SpanContext, trace, TraceFlags } from '@opentelemetry/api';

/** W3C Trace Context, version 00: `00-<trace id>-<parent span id>-<flags>`, lower-case hex. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = /^0+$/;

/** The span context a `traceparent` names, or undefined for anything else (an all-zero id included). */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match || ZERO_TRACE.test(match[1]) || ZERO_TRACE.test(match[2])) return undefined;
  return { traceId: match[1], spanId: match[2], traceFlags: parseInt(match[3], 16) & TraceFlags.SAMPLED, isRemote: true };
}

export function formatTraceparent(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0')}`;
}

/** The active span's `traceparent` (what is stored with a job or a notification), or null outside a recording span. */
export function activeTraceparent(): string | null {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? formatTraceparent(span.spanContext()) : null;
}

/** The active recording span's trace id, or null. */
export function activeTraceId(): string | null {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext().traceId : null;
}

/** The headers that carry the active span to another service: none outside a recording span. */
export function traceHeaders(): Record<string, string> {
  const traceparent = activeTraceparent();
  return traceparent ? { traceparent } : {};
}

/** A context whose parent is the stored `traceparent`; the root context when there is none (or it is not one). */
export function contextOf(traceparent: string | null | undefined): Context {
  const parent = parseTraceparent(traceparent);
  return parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
}

/** Links to each stored `traceparent` (the receive spans a coalesced read serves). */
export function linksTo(traceparents: readonly (string | null)[]): Link[] {
  return traceparents.flatMap((value) => {
    const parent = parseTraceparent(value);
    return parent ? [{ context: parent }] : [];
  });
}

/** pino's mixin: `trace_id` and `span_id` on every log line written inside a recording span. */
export function logCorrelation(): Record<string, string> {
  const span = trace.getSpan(context.active());
  if (!span?.isRecording()) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
