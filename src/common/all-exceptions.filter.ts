import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toErrorResponse } from './error-response';

/** Node's error on a request whose client closed the connection before sending all of it. */
const isClientAbort = (exception: unknown) => (exception as { code?: unknown } | null)?.code === 'ECONNRESET';

@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger(AllExceptionsFilter.name);

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    // An upload cut short, by its client or by the request timeout (http/server-timeouts.ts): no one is left to answer.
    if (isClientAbort(exception) && (reply.raw.socket?.destroyed ?? true)) return;
    const { status, body, unexpected, retryAfterS } = toErrorResponse(exception);
    if (unexpected) {
      const msg = exception instanceof Error ? (exception.stack ?? exception.message) : String(exception);
      this.logger.error({ msg, requestId: host.switchToHttp().getRequest<FastifyRequest>().id });
    }
    if (retryAfterS !== undefined) void reply.header('Retry-After', String(retryAfterS));
    // JSON whatever the route answers when it succeeds (a @Header('content-type') is already on the reply).
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}
