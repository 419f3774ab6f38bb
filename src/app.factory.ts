import { errorBody } from './common/api-error';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { FastifyInstance, LogController } from 'fastify';
import type { DestinationStream } from 'pino';
import { AppModule } from './app.module';
import { MAX_WAIT_S } from './changes/dto/list-changes.query';
import { AppConfig } from './config/app-config';
import { DatabaseService } from './database/database.service';
import { BODY_LIMIT_BYTES, registerJsonParser } from './http/body-parser';
import { closeQuietConnections } from './http/closing-connections';
import { answerClientError, answerFrameworkError, SHUTTING_DOWN } from './http/framework-errors';
import { setupOpenApi } from './http/openapi';
import { serverTimeouts } from './http/server-timeouts';
import { MetricsService } from './metrics/metrics.service';
import { createPinoLogger, lazyRequestLogger, logRequests, PinoNestLogger, requestIdOf } from './logging/logger';
import { instrumentWebhookRoute } from './webhooks/webhook-metrics';
import { POZY_WEBHOOK_ROUTES } from './webhooks/webhooks.controller';
import { WorkspaceRegistry } from './workspaces/workspace-registry.service';

/** Builds and initialises the whole service (migrations applied, worker running), not yet listening. */
export async function createApp(config: AppConfig, options: { logDestination?: DestinationStream } = {}): Promise<NestFastifyApplication> {
  // One pino logger for Fastify's request lines and Nest's (no per-request async context unless traces are on: on
  // Node 20 that costs every promise, and webhook throughput with it).
  const logger = createPinoLogger(config, options.logDestination);
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    // A long poll stays silent for up to its `wait`: the idle limit lies beyond it.
    ...serverTimeouts(MAX_WAIT_S * 1000),
    // Answered by the onRequest hook below, in the service's error shape.
    return503OnClosing: false,
    // Fastify's own refusals answer in the service's error shape too (http/framework-errors.ts).
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    loggerInstance: logger,
    // logRequests writes one line per request instead of Fastify's two; request lines carry `requestId`.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    // A request's child logger only when Fastify logs through it (an error), not for every request.
    childLoggerFactory: lazyRequestLogger,
    // The correlation id: the caller's X-Request-Id when it looks like one, else a UUID.
    requestIdHeader: false,
    genReqId: requestIdOf,
  });
  const fastify = adapter.getInstance<FastifyInstance>();
  registerJsonParser(fastify, POZY_WEBHOOK_ROUTES);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger: new PinoNestLogger(logger),
    // Our own JSON parser (http/body-parser.ts) replaces Nest's.
    bodyParser: false,
    // Throw start-up errors to main.ts (which stops the embedded database and exits 1) instead of aborting.
    abortOnError: false,
  });
  setupOpenApi(app);
  // While closing, answer in-flight requests with `Connection: close`: otherwise their keep-alive connections
  // hold the server open (Node only closes the connections idle at the moment close begins).
  // Nor does Node close a connection that has not begun a request (http/closing-connections.ts).
  let closing = false;
  const connections = closeQuietConnections(fastify.server);
  fastify.addHook('preClose', (done) => {
    closing = true;
    connections.closing();
    done();
  });
  fastify.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    void reply.code(503).send(SHUTTING_DOWN);
  });
  fastify.addHook('onSend', (request, reply, payload, done) => {
    void reply.header('x-request-id', request.id);
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
  const registry = app.get(WorkspaceRegistry);
  logRequests(fastify, config, () => registry.secretsToRedact());
  instrumentWebhookRoute(fastify, app.get(MetricsService));
  if (!config.servesHttp) {
    // ROLE=worker: probes and scrapes only; webhooks and the API belong to the api replicas.
    fastify.addHook('onRequest', (request, reply, done) => {
      if (/^\/(health\/(live|ready)|metrics)$/.test(request.url.split('?')[0])) return done();
      const body = errorBody('not_found', 'ROLE=worker serves only /health/live, /health/ready and /metrics');
      void reply.code(body.statusCode).send(body);
    });
  }
  try {
    await app.init();
  } catch (error) {
    // close() would wait on the failed init; the pool is what has to be released.
    await app
      .get(DatabaseService)
      .pool.end()
      .catch(() => undefined);
    throw error;
  }
  return app;
}
