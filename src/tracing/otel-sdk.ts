import { Tracer } from '@opentelemetry/api';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import { TracingConfig } from '../config/app-config';

/**
 * The OpenTelemetry SDK, loaded only when an OTLP endpoint is set (tracing.service.ts imports this file lazily), so a
 * service without one loads none of it. Each app gets its own provider and never registers it globally: two apps in
 * one process (tests, the bench) stay two services, and nothing is read from process.env behind the configuration.
 */
export interface TracerHandle {
  readonly tracer: Tracer;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let contextManagerInstalled = false;

function samplerOf(config: TracingConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

export function startTracer(config: TracingConfig, instanceId: string): TracerHandle {
  // The active span follows the async calls; installed once for the process, and only when tracing is on (on
  // Node 20 it costs every promise).
  if (!contextManagerInstalled) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    contextManagerInstalled = true;
  }
  const options = { url: config.url, headers: { ...config.headers } };
  const exporter = config.protocol === 'http/json' ? new JsonExporter(options) : new ProtobufExporter(options);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      ...config.resourceAttributes,
      'service.name': config.serviceName,
      'service.instance.id': instanceId,
    }),
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.scheduleDelayMs })],
  });
  return {
    tracer: provider.getTracer('pozy-sync'),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
