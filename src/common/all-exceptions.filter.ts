import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toErrorResponse } from './error-response';

@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger(AllExceptionsFilter.name);

  catch(exception: unknown, host: ArgumentsHost): void {
    const { status, body, unexpected, retryAfterS } = toErrorResponse(exception);
    if (unexpected) {
      const msg = exception instanceof Error ? (exception.stack ?? exception.message) : String(exception);
      this.logger.error({ msg, requestId: host.switchToHttp().getRequest<FastifyRequest>().id });
    }
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (retryAfterS !== undefined) void reply.header('Retry-After', String(retryAfterS));
    void reply.status(status).send(body);
  }
}
