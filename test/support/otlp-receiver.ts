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
 * A trace collector on loopback, as an OTLP/HTTP endpoint is (`POST /v1/traces`): it keeps every span exported as
 * JSON and, for protobuf, the request's headers (the test reads only what the JSON exports say).
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
      }[];
    }[];
  }[];
}
