import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import type { PublicationState } from '../database/logical-publication';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** What GET /health/ready asks of the database. */
@Injectable()
export class ReadinessRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Whether the database answers a trivial query within `timeoutMs`, whatever it is doing. */
  @GenerateSql({ params: [Sample.NUMBER] })
  answers(timeoutMs: number): Promise<boolean> {
    return Promise.race([
      this.database.db
        .selectNoFrom((eb) => eb.lit(1).as('one'))
        .execute()
        .then(
          () => true,
          () => false,
        ),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref()),
    ]);
  }

  /** LOGICAL_PUBLICATION's publication as this process's boot left it; null when the variable is unset. */
  @GenerateSql({ none: 'what DatabaseService found at boot' })
  logicalPublication(): PublicationState | null {
    return this.database.logicalPublication;
  }

  /** Migrations this version ships that the database has not applied (another replica may be mid-upgrade). */
  @GenerateSql({ none: "the migrator's statement (src/database/migrator.ts)" })
  pendingMigrations(): Promise<string[]> {
    return this.database.pendingMigrations();
  }
}
