import { Global, Module } from '@nestjs/common';
import { QueryPool } from './query-pool';
import { ReadReplica } from './read-replica.service';
import { ReplicaReadInterceptor } from './replica-read';

/**
 * Where the query endpoints read: the read replica (DATABASE_READ_URL) or the primary through their own pool
 * (QueryPool), chosen per request by `@ReplicaRead()`'s interceptor.
 */
@Global()
@Module({ providers: [QueryPool, ReadReplica, ReplicaReadInterceptor], exports: [QueryPool, ReadReplica, ReplicaReadInterceptor] })
export class ReadReplicaModule {}
