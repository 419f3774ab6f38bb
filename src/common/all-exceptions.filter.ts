import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { toErrorResponse } from './error-response';

@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger(AllExceptionsFilter.name);

  catch(exception: unknown, host: ArgumentsHost): void {
    const { status, body, unexpected } = toErrorResponse(exception);
    if (unexpected) this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    void host.switchToHttp().getResponse<FastifyReply>().status(status).send(body);
  }
}
