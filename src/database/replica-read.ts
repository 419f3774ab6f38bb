import {
  applyDecorators,
  CallHandler,
  createParamDecorator,
  ExecutionContext,
  HttpException,
  Injectable,
  NestInterceptor,
  UseInterceptors,
} from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { catchError, Observable, tap, throwError } from 'rxjs';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse, ErrorCodesAnswered } from '../common/error-body.dto';
import { TOKENS_UNAVAILABLE } from '../common/read-access';
import { REPLICA_LAG_HEADER, REPLICA_READ_EXTENSION } from '../common/read-consistency';
import type { Db } from './database.service';
import { queryRefusal } from './query-pool';
import { ReadReplica, ReadTarget } from './read-replica.service';

const READ_TARGET = Symbol('readTarget');
type RequestWithTarget = FastifyRequest & { [READ_TARGET]?: ReadTarget };

/** A query cut by the statement timeout, or that found no connection free, as its 503; any other failure as it is. */
const refused = (error: unknown): Observable<never> => throwError(() => queryRefusal(error) ?? error);

/**
 * Chooses where the request reads, before its handler runs: the read replica unless `consistency=strong` (or no
 * replica, or it is unavailable), else the primary through the query endpoints' own pool. An answer read from the
 * replica carries X-Replica-Lag-Ms; a read the replica could not serve (unreachable, a recovery conflict) is run again,
 * whole, on the primary. A read cut by the statement timeout, or that found no connection free, answers a 503.
 */
@Injectable()
export class ReplicaReadInterceptor implements NestInterceptor {
  private readonly primary: ReadTarget;

  constructor(private readonly replica: ReadReplica) {
    this.primary = replica.primary();
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<RequestWithTarget>();
    if (!this.replica.configured) {
      // No replica: every read is the primary's, with no retry and no lag to stamp; only the refusals remain.
      request[READ_TARGET] = this.primary;
      return next.handle().pipe(catchError(refused));
    }
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    // Read before the validation pipe runs: anything but `strong` reads the replica, and a bad value is refused anyway.
    const strong = (request.query as Record<string, unknown> | undefined)?.consistency === 'strong';
    request[READ_TARGET] = this.replica.target(strong ? 'strong' : 'eventual');
    const stampLag = () => {
      const lag = this.replica.lagMs();
      if (request[READ_TARGET]?.fromReplica && lag !== undefined) void reply.header(REPLICA_LAG_HEADER, String(Math.round(lag)));
    };
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (!request[READ_TARGET]?.fromReplica || !this.replica.readFailed(error)) return throwError(() => error);
        // Subscribing again runs the pipes and the handler again, now with the primary's Db.
        request[READ_TARGET] = this.replica.primary();
        return next.handle();
      }),
      catchError(refused),
      tap({
        next: stampLag,
        // A 404 read from a replica behind may be the lag: say so. A 400 read nothing.
        error: (error: unknown) => {
          const status = error instanceof ApiError ? error.status : error instanceof HttpException ? error.getStatus() : 500;
          if (status !== 400) stampLag();
        },
      }),
    );
  }
}

/**
 * On a controller method (or class) whose reads may go to the read replica: pair it with a `@ReadDb() db: Db`
 * parameter passed to the query code, and `consistency` in the query DTO (`ConsistencyQuery` or `@ConsistencyParam()`).
 */
export const ReplicaRead = (): MethodDecorator & ClassDecorator =>
  applyDecorators(UseInterceptors(ReplicaReadInterceptor), ApiExtension(REPLICA_READ_EXTENSION, true), ApiErrorResponse(QUERY_REFUSALS));

/** The 503s of every query endpoint (query-pool.ts), with `Retry-After`. */
export const QUERY_REFUSALS: ErrorCodesAnswered = {
  query_timeout: 'a statement ran past QUERY_STATEMENT_TIMEOUT_MS and was stopped (narrow the query, or retry later); with `Retry-After`',
  overloaded: "no database connection for queries came free in time (DATABASE_QUERY_POOL_SIZE, or the server's own limit); with `Retry-After`",
  ...TOKENS_UNAVAILABLE,
};

/** The `Db` this request reads through (the replica's or the primary's), chosen by `@ReplicaRead()`. */
export const ReadDb = createParamDecorator((_data: unknown, context: ExecutionContext): Db => {
  const target = context.switchToHttp().getRequest<RequestWithTarget>()[READ_TARGET];
  if (!target) throw new Error('@ReadDb() needs @ReplicaRead() on the handler or its controller');
  return target.db;
});
