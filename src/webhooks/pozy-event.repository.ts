import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { addJobCall, addJobParams, JobSpec } from '../queue/job-sql';

export interface NewPozyEvent {
  id: string;
  type: string;
  /** The body exactly as received; PostgreSQL parses it into jsonb. */
  payloadJson: string;
  timestamp: Date;
  deliveryId: string | null;
  attempt: number | null;
  test: boolean;
  resourceType: string | null;
  resourceId: string | null;
}

export interface InsertOutcome {
  inserted: boolean;
  jobId: string | null;
}

// One statement is one transaction: the job exists if and only if the event row was new, and neither exists
// unless both committed. A duplicate waits on the primary key, inserts nothing and so adds no job.
const INSERT_EVENT_AND_JOB = `
WITH inserted AS (
  INSERT INTO pozy_event (id, type, payload, "timestamp", delivery_id, attempt, test, resource_type, resource_id)
  VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8, $9)
  ON CONFLICT (id) DO NOTHING
  RETURNING id
), job AS (
  SELECT (${addJobCall(11)}).id AS id FROM inserted WHERE $10::boolean
)
SELECT EXISTS (SELECT 1 FROM inserted) AS inserted, (SELECT id::text FROM job) AS job_id`;

const NO_JOB = [null, null, null, 0, null];

@Injectable()
export class PozyEventRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Stores the event once per id and, only when it is new, enqueues `job` in the same transaction. */
  async insert(event: NewPozyEvent, job: JobSpec | null): Promise<InsertOutcome> {
    const { rows } = await this.database.pool.query<{ inserted: boolean; job_id: string | null }>(INSERT_EVENT_AND_JOB, [
      event.id,
      event.type,
      event.payloadJson,
      event.timestamp,
      event.deliveryId,
      event.attempt,
      event.test,
      event.resourceType,
      event.resourceId,
      job !== null,
      ...(job ? addJobParams(job) : NO_JOB),
    ]);
    return { inserted: rows[0].inserted, jobId: rows[0].job_id };
  }
}
