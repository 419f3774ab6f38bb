import { Global, Module } from '@nestjs/common';
import { ReadReplica } from './read-replica.service';
import { ReplicaReadInterceptor } from './replica-read';

/** The read replica (DATABASE_READ_URL) and `@ReplicaRead()`'s interceptor, for any controller that reads the mirror. */
@Global()
@Module({ providers: [ReadReplica, ReplicaReadInterceptor], exports: [ReadReplica, ReplicaReadInterceptor] })
export class ReadReplicaModule {}
