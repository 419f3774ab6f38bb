import type { Pool } from 'pg';
import type { FaultConfig } from '../../simulator/faults';
import type { PozySimulator, SimulatorOptions } from '../../simulator/simulator';
import { createTestDatabase, TestDatabase } from './database';
import { Harness, startHarness } from './harness';
import { Http, httpTo } from './http';
import { RunningService, startService } from './service';

/** The Pozy simulator a spec's service reads (test/support/harness.ts has the defaults). */
export interface SimulatorSettings extends Partial<
  Pick<SimulatorOptions, 'rateLimitPerMinute' | 'rateLimitWindowMs' | 'otherClientPerMinute' | 'clockOffsetMs'>
> {
  seed?: number;
  faults?: Partial<FaultConfig>;
  /** false: the simulator does not deliver its webhooks (the test sends what it means to). */
  deliver?: boolean;
  /** Runs once the simulator is up, before the service starts: a workspace that exists before the first start. */
  before?: (sim: PozySimulator) => void;
}

export interface SpecOptions {
  /** The service's environment, beside test/support/service.ts's defaults (a value undefined removes one). */
  env?: Record<string, string | undefined>;
  /** Starts the Pozy simulator too, and points the service at it. */
  simulator?: SimulatorSettings;
}

/** A fresh database and the whole service on it, on loopback. */
export interface ServiceSpec {
  db: TestDatabase;
  service: RunningService;
  /** Requests to the service. */
  http: Http;
  /** A pool of the test's own on the database (to look at rows directly), ended by `close`. */
  pool(max?: number): Pool;
  /** Stops everything the spec started and drops its database. */
  close(): Promise<void>;
}

/** The same, with the Pozy simulator delivering to it and answering its reads. */
export interface SimulatorSpec extends ServiceSpec, Harness {
  close(): Promise<void>;
}

/**
 * What a spec file starts in its `beforeAll`: a database of its own, the service on it and, with `simulator`, Pozy's
 * simulator; `close` in `afterAll` stops them all and drops the database.
 */
export function startSpec(label: string, options: SpecOptions & { simulator: SimulatorSettings }): Promise<SimulatorSpec>;
export function startSpec(label: string, options?: SpecOptions): Promise<ServiceSpec>;
export async function startSpec(label: string, options: SpecOptions = {}): Promise<ServiceSpec | SimulatorSpec> {
  const db = await createTestDatabase(label);
  const pools: Pool[] = [];
  const pool = (max = 2) => {
    const created = db.pool(max);
    pools.push(created);
    return created;
  };
  const finish = async (stop?: () => Promise<void>) => {
    try {
      await stop?.();
      await Promise.all(pools.splice(0).map((created) => created.end()));
    } finally {
      await db.drop();
    }
  };
  try {
    if (options.simulator) {
      const { seed, faults, deliver, before, ...pozy } = options.simulator;
      const harness = await startHarness(db.url, { env: options.env, seed, faults, deliver, before, simulator: pozy });
      return { ...harness, db, http: httpTo(harness.service), pool, close: () => finish(() => harness.close()) };
    }
    const service = await startService(db.url, options.env);
    return { db, service, http: httpTo(service), pool, close: () => finish(() => service.close()) };
  } catch (error) {
    await finish();
    throw error;
  }
}
