import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { Options } from 'pino-http';
import { AppConfig } from '../config/app-config';
import { LogLevelName } from '../config/environment';

const PINO_LEVELS: Record<LogLevelName, string> = { error: 'error', warn: 'warn', log: 'info', debug: 'debug', verbose: 'trace' };

/** A caller's X-Request-Id is kept when it looks like an id; anything else (or none) gets a fresh UUID. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;
export const REQUEST_ID_HEADER = 'x-request-id';

// Never logged, wherever they appear: a request's authorization, signatures, cookies, the secrets of subscriptions.
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-pozy-signature"]',
  'req.headers["webhook-signature"]',
  'res.headers["set-cookie"]',
  '*.secret',
  '*.apiKey',
];

/** Fastify's `genReqId`: the request's id, which pino logs and the response carries back (app.factory.ts). */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

function httpOptions(config: AppConfig): Options {
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true);
  return {
    level: PINO_LEVELS[config.logLevel],
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // Lines written while handling a request carry its id as `requestId`, not the whole request.
    quietReqLogger: true,
    customAttributeKeys: { reqId: 'requestId' },
    // The request line holds what an operator needs and nothing that could be a secret (no headers, no body).
    serializers: {
      req: (req: { id: string; method: string; url: string; remoteAddress?: string; headers: Record<string, unknown> }) => ({
        id: req.id,
        method: req.method,
        url: req.url,
        remoteAddress: req.remoteAddress,
        userAgent: req.headers['user-agent'],
        eventId: req.headers['x-pozy-event-id'],
        deliveryId: req.headers['x-pozy-delivery-id'],
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    // Probes and scrapes come every few seconds: only worth a line when debugging.
    customLogLevel: (req, res, error) =>
      error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : /^\/(health|metrics)/.test(req.url ?? '') ? 'debug' : 'info',
    transport: pretty ? { target: 'pino-pretty', options: { singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } : undefined,
  };
}

/**
 * Structured logs (pino): JSON lines in production, readable ones in a terminal; one line per request with its
 * correlation id (X-Request-Id, answered back), and that id on every line logged while handling the request.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({ pinoHttp: httpOptions(config), renameContext: 'context' }),
    }),
  ],
})
export class LoggingModule {}
