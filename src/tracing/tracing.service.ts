import { randomUUID } from 'node:crypto';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Attributes, context, INVALID_SPAN_CONTEXT, Link, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace, Tracer } from '@opentelemetry/api';
import { AppConfig } from '../config/app-config';
import type { TracerHandle } from './otel-sdk';
import { contextOf } from './trace-context';

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** The span's parent: a stored `traceparent` (a root span when null); unset: the active span. */
  parent?: string | null;
  /** A new trace, whatever span is active (a run). */
  root?: boolean;
}

/** The most a shutdown waits for the last spans to reach the collector. */
const SHUTDOWN_EXPORT_MS = 2_000;

/** What `span` hands its function when tracing is off: records nothing, costs nothing. */
const NOT_RECORDING: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Spans of this app, exported over OTLP/HTTP when an endpoint is configured; otherwise every call goes straight to
 * its function, and the SDK is never loaded.
 */
@Injectable()
export class Tracing implements OnApplicationShutdown {
  private readonly logger = new Logger(Tracing.name);

  private constructor(
    private readonly handle: TracerHandle | null,
    /** This process's `service.instance.id`. */
    readonly instanceId: string,
  ) {}

  static off(): Tracing {
    return new Tracing(null, randomUUID());
  }

  static start(config: AppConfig): Tracing {
    if (!config.tracing) return Tracing.off();
    // Loaded only now: a service without an endpoint never loads the SDK.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { startTracer } = require('./otel-sdk') as typeof import('./otel-sdk');
    const instanceId = randomUUID();
    return new Tracing(startTracer(config.tracing, instanceId), instanceId);
  }

  get enabled(): boolean {
    return this.handle !== null;
  }

  private get tracer(): Tracer | undefined {
    return this.handle?.tracer;
  }

  /** Runs `fn` inside a span that ends when it settles; a throw is recorded on the span, then rethrown. */
  span<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
    const tracer = this.tracer;
    if (!tracer) return fn(NOT_RECORDING);
    const parent = options.root ? ROOT_CONTEXT : options.parent !== undefined ? contextOf(options.parent) : context.active();
    const attributes = { ...options.attributes };
    return tracer.startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes, links: options.links }, parent, async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /** Exports what has ended so far (tests, before they read the collector). */
  async flush(): Promise<void> {
    await this.handle?.flush();
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.handle) return;
    // The last batch goes out before the process ends; a collector that is down must not hold the shutdown.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(
        () => resolve(this.logger.warn(`Spans not exported within ${SHUTDOWN_EXPORT_MS} ms at shutdown: dropped`)),
        SHUTDOWN_EXPORT_MS,
      );
    });
    const exported = this.handle.shutdown().catch((error: unknown) => this.logger.warn(`Spans not exported at shutdown: ${String(error)}`));
    await Promise.race([exported, late]).finally(() => clearTimeout(timer));
  }
}
