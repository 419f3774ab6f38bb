import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An attribute value as OTLP/JSON writes it. */
interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
type KeyValues = { key: string; value: AnyValue }[] | undefined;

/** One span as exported, flattened: its attributes and its resource's as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's numbering: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
  events: { name: string; attributes: Record<string, string | number | boolean> }[];
  links: { traceId: string; spanId: string }[];
  /** 2: error. */
  statusCode: number;
  /** Milliseconds since the epoch, fractional. */
  startMs: number;
  endMs: number;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

function values(list: KeyValues): Record<string, string | number | boolean> {
  return Object.fromEntries(
    (list ?? []).map(({ key, value }) => [
      key,
      value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue ?? '')),
    ]),
  );
}

/**
 * A trace collector on loopback, as an OTLP/HTTP endpoint is (`POST /v1/traces`), standing in for a team's as the
 * simulator stands in for Pozy (the demo and the tests): it keeps every span exported as JSON and, for protobuf,
 * only each request's headers and size.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every export's path and headers, in order. */
  readonly requests: { path: string; headers: IncomingHttpHeaders; bytes: number }[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    const self: { receiver?: OtlpReceiver } = {};
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        self.receiver!.requests.push({ path: request.url ?? '', headers: request.headers, bytes: body.length });
        if (request.headers['content-type']?.startsWith('application/json')) self.receiver!.take(JSON.parse(body.toString('utf8')) as Export);
        response
          .writeHead(200, { 'content-type': request.headers['content-type'] ?? 'application/json' })
          .end(request.headers['content-type']?.startsWith('application/json') ? '{}' : '');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self.receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}`);
    return self.receiver;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  named(name: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.name === name);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private take(body: Export): void {
    for (const resourceSpans of body.resourceSpans ?? []) {
      const resource = values(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            attributes: values(span.attributes),
            resource,
            events: (span.events ?? []).map((event) => ({ name: event.name, attributes: values(event.attributes) })),
            links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
            statusCode: span.status?.code ?? 0,
            startMs: Number(BigInt(span.startTimeUnixNano) / 1000n) / 1000,
            endMs: Number(BigInt(span.endTimeUnixNano) / 1000n) / 1000,
          });
        }
      }
    }
  }
}

interface Export {
  resourceSpans?: {
    resource?: { attributes?: KeyValues };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: KeyValues;
        events?: { name: string; attributes?: KeyValues }[];
        links?: { traceId: string; spanId: string }[];
        status?: { code?: number };
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
      }[];
    }[];
  }[];
}

/** A trace as indented lines: each span's start after the trace's first, its duration and its replica. */
export function traceTree(spans: readonly ReceivedSpan[]): string[] {
  const start = Math.min(...spans.map((s) => s.startMs));
  const instances = [...new Set(spans.map((s) => String(s.resource['service.instance.id'])))];
  const lines: string[] = [];
  const walk = (span: ReceivedSpan, depth: number) => {
    const name = `${'  '.repeat(depth)}${span.name}`;
    const at = `+${(span.startMs - start).toFixed(1)} ms`;
    const replica = `replica ${instances.indexOf(String(span.resource['service.instance.id'])) + 1}`;
    lines.push(`${name.padEnd(44)} ${at.padStart(11)}  ${(span.endMs - span.startMs).toFixed(1).padStart(7)} ms  ${replica}`);
    for (const child of spans.filter((s) => s.parentSpanId === span.spanId).sort((a, b) => a.startMs - b.startMs)) walk(child, depth + 1);
  };
  const ids = new Set(spans.map((s) => s.spanId));
  // The roots: no parent, or a parent outside the trace's spans (a caller's).
  for (const root of spans.filter((s) => !ids.has(s.parentSpanId))) walk(root, 0);
  return lines;
}
