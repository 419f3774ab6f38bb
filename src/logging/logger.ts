import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LoggerService } from '@nestjs/common';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino, { Bindings, ChildLoggerOptions, DestinationStream, LevelWithSilentOrString, Logger as Pino } from 'pino';
import { AppConfig } from '../config/app-config';
import { LogLevelName } from '../config/environment';
import { logCorrelation } from '../tracing/trace-context';
import { redactUrl } from './redact-url';

const PINO_LEVELS: Record<LogLevelName, pino.Level> = { error: 'error', warn: 'warn', log: 'info', debug: 'debug', verbose: 'trace' };

/** A caller's X-Request-Id is kept when it looks like an id; anything else (or none) gets a fresh UUID. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;
/** Paths remembered redacted at most (a scan of random paths must not grow the memo). */
const MAX_KNOWN_URLS = 1_000;
/**
 * Standard output takes the lines in writes of about this many bytes (a dozen request lines), at most LOG_FLUSH_MS
 * after they were logged, and all that is left when the process exits (pino flushes its destination then): one write,
 * handed to a libuv thread, for every request line cost the read endpoints about a tenth of their CPU under load.
 */
const LOG_WRITE_BYTES = 4_096;
const LOG_FLUSH_MS = 100;

/** Fastify's `genReqId`: the correlation id that request lines carry and the response answers back. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * The one pino logger of the process: JSON lines, or readable ones in a terminal (LOG_FORMAT). Nothing logs headers
 * or bodies; these paths are censored anyway, wherever a future line might carry them.
 */
export function createPinoLogger(config: AppConfig, destination?: DestinationStream): Pino {
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY === true);
  const options: pino.LoggerOptions = {
    level: PINO_LEVELS[config.logLevel],
    redact: {
      paths: ['*.authorization', '*.cookie', '*.secret', '*.apiKey', '*["x-pozy-signature"]', '*["webhook-signature"]'],
      censor: '[redacted]',
    },
    base: { pid: process.pid },
    // Request lines are built field by field in logRequests; Fastify's default serializers would drop fields.
    serializers: { req: (req: unknown) => req, res: (res: unknown) => res },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Only with traces on: the lookup would cost every line for nothing.
    ...(config.tracing ? { mixin: logCorrelation } : {}),
  };
  if (destination) return pino(options, destination);
  if (pretty)
    return pino({ ...options, transport: { target: 'pino-pretty', options: { singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid' } } });
  return pino(options, pino.destination({ dest: 1, minLength: LOG_WRITE_BYTES, periodicFlush: LOG_FLUSH_MS, sync: false }));
}

/**
 * Fastify's `childLoggerFactory`: a request's logger (bound to its `requestId`) made the first time something logs
 * through it, Fastify's own error lines, rather than for every request: pino builds a child's level methods anew, and
 * request lines are written by logRequests from the root's child.
 */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings, options);
}

class LazyChildLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): LevelWithSilentOrString {
    return this.logger.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.logger.level = level;
  }

  fatal(...args: unknown[]): void {
    Reflect.apply(this.logger.fatal, this.logger, args);
  }

  error(...args: unknown[]): void {
    Reflect.apply(this.logger.error, this.logger, args);
  }

  warn(...args: unknown[]): void {
    Reflect.apply(this.logger.warn, this.logger, args);
  }

  info(...args: unknown[]): void {
    Reflect.apply(this.logger.info, this.logger, args);
  }

  debug(...args: unknown[]): void {
    Reflect.apply(this.logger.debug, this.logger, args);
  }

  trace(...args: unknown[]): void {
    Reflect.apply(this.logger.trace, this.logger, args);
  }

  silent(...args: unknown[]): void {
    Reflect.apply(this.logger.silent, this.logger, args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/** Every secret the configuration holds: none of them may appear in a log line, wherever a client put it. */
export function configuredSecrets(config: AppConfig): string[] {
  return [
    config.adminToken,
    ...config.readTokens,
    config.pozy.apiKey,
    ...config.pozy.webhookSecrets,
    // As SECRETS_ENCRYPTION_KEY carries them: base64.
    ...config.secretsEncryptionKeys.map((entry) => entry.key.toString('base64')),
    // A collector's API key, usually.
    ...Object.values(config.tracing?.headers ?? {}),
  ].filter((secret): secret is string => typeof secret === 'string' && secret !== '');
}

/**
 * One line per request, written when the answer is sent, with the request's id as `requestId`. Fastify's own two lines per request are turned off in app.factory.ts. Probes and scrapes are
 * logged at debug: they come every few seconds. A 5xx with `Retry-After` is load the service chose to shed (a query
 * past its timeout, no connection free, too many long polls), not a failure: a warning. `moreSecrets`: those known
 * only at run time (the workspaces' API keys and webhook secrets), redacted where a whole value is one.
 */
export function logRequests(fastify: FastifyInstance, config: AppConfig, moreSecrets: () => ReadonlySet<string> = () => new Set()): void {
  const secrets = configuredSecrets(config);
  // Every field of a request line is built here (the URL redacted by redactUrl, no header or body), so the root's
  // wildcard redaction would find nothing in it, yet would walk every line: this child logger skips it.
  const lines = (fastify.log as Pino).child({}, { redact: [] });
  const urls = new RedactedUrls(secrets, moreSecrets);
  fastify.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    // 502: Pozy failed an admin call that waits on it (a workspace being added), not this service.
    const shed = (status >= 500 && reply.hasHeader('retry-after')) || status === 502;
    const level = status >= 500 && !shed ? 'error' : status >= 400 ? 'warn' : /^\/(health|metrics)/.test(request.url) ? 'debug' : 'info';
    if (lines.isLevelEnabled(level)) {
      const eventId = request.headers['x-pozy-event-id'];
      lines[level](
        {
          requestId: request.id,
          req: {
            id: request.id,
            method: request.method,
            url: urls.of(request.url),
            remoteAddress: request.ip,
            userAgent: request.headers['user-agent'],
            ...(typeof eventId === 'string' ? { eventId, deliveryId: request.headers['x-pozy-delivery-id'] } : {}),
          },
          res: { statusCode: status },
          responseTime: Math.round(reply.elapsedTime),
        },
        'request completed',
      );
    }
    done();
  });
}

/** Paths without a query (every webhook's) redacted once, until the workspaces' secrets change: most URLs recur. */
class RedactedUrls {
  private readonly known = new Map<string, string>();
  private knownFor: ReadonlySet<string> | undefined;

  constructor(
    private readonly secrets: readonly string[],
    private readonly moreSecrets: () => ReadonlySet<string>,
  ) {}

  of(url: string): string {
    const more = this.moreSecrets();
    if (url.includes('?')) return redactUrl(url, this.secrets, more);
    // The registry hands a new set whenever a workspace's secrets change.
    if (more !== this.knownFor || this.known.size >= MAX_KNOWN_URLS) {
      this.known.clear();
      this.knownFor = more;
    }
    let redacted = this.known.get(url);
    if (redacted === undefined) {
      redacted = redactUrl(url, this.secrets, more);
      this.known.set(url, redacted);
    }
    return redacted;
  }
}

/**
 * Nest's LoggerService on pino: every `new Logger(Class.name)` line becomes a JSON line with its `context`. A message
 * may be an object, whose fields (e.g. `jobId`) become fields of the line; its `msg` is the message.
 */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Pino) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    // Nest passes (message, stack, context) for errors.
    const stack = params.length > 1 && typeof params[0] === 'string' ? params[0] : undefined;
    this.write('error', message, params, stack);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: pino.Level, message: unknown, params: unknown[], stack?: string): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const last = params.at(-1);
    const context = typeof last === 'string' && (params.length > 1 || stack === undefined) ? last : undefined;
    if (message instanceof Error) {
      this.pino[level]({ context, err: message }, message.message);
    } else if (typeof message === 'object' && message !== null) {
      const { msg, ...fields } = message as { msg?: unknown };
      this.pino[level]({ context, ...fields, ...(stack ? { stack } : {}) }, typeof msg === 'string' ? msg : '');
    } else {
      this.pino[level]({ context, ...(stack ? { stack } : {}) }, String(message));
    }
  }
}
