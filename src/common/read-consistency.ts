import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';

/**
 * `eventual` (the default): the read may be answered by the read replica (DATABASE_READ_URL), a little behind the
 * primary. `strong`: from the primary, so a consumer sees what it has just written (e.g. after an admin resync).
 */
export const CONSISTENCIES = ['eventual', 'strong'] as const;
export type Consistency = (typeof CONSISTENCIES)[number];

/** On every answer read from the replica: how far its replay was behind the primary, in ms. */
export const REPLICA_LAG_HEADER = 'X-Replica-Lag-Ms';

/**
 * How often both servers' WAL positions are sampled for that header, and so its resolution: two one-row statements
 * per sample (one on each server), five samples a second, cost next to nothing, and a read pays no round trip for it.
 */
export const REPLICA_LAG_SAMPLE_MS = 200;

/** Marks an operation that may read the replica; http/openapi.ts documents its header on every answer. */
export const REPLICA_READ_EXTENSION = 'x-replica-read';

/** The `consistency` query parameter, for a DTO that already extends another (a list's PageQuery). */
export const ConsistencyParam = () =>
  applyDecorators(
    ApiPropertyOptional({
      enum: CONSISTENCIES,
      default: 'eventual',
      description:
        '`eventual`: may be read from the read replica (when DATABASE_READ_URL is set), which then answers `X-Replica-Lag-Ms`. ' +
        '`strong`: read from the primary, so what you have just written (e.g. through the admin API) is seen.',
      example: 'strong',
    }),
    IsOptional(),
    IsIn(CONSISTENCIES, { message: `consistency must be one of: ${CONSISTENCIES.join(', ')}` }),
  );

/** The `consistency` query parameter alone (GET /posts/:id, GET /accounts/:id), or as the base of a query DTO. */
export class ConsistencyQuery {
  @ConsistencyParam()
  consistency?: Consistency;
}
