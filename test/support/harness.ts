import type { Pool } from 'pg';
import { AckSpool } from '../../src/receive/ack-spool';
import { FaultConfig } from '../../simulator/faults';
import { PozySimulator, SimulatorOptions } from '../../simulator/simulator';
import type { PozyEvent } from '../../simulator/world/pozy-shapes';
import { queuedJobs, reconcileRequests } from './queue';
import { RunningService, startService, TEST_WEBHOOK_SECRET, waitFor } from './service';

export const HARNESS_ADMIN_TOKEN = 'admin_harness_token';

export interface Harness {
  sim: PozySimulator;
  service: RunningService;
  /** Resources named by the events the world emitted: what the mirror can know about. */
  seen: { postIds: Set<string>; profileIds: Set<string> };
  close(): Promise<void>;
}

/**
 * The Pozy simulator on loopback and the whole service pointed at it: the simulator delivers the world's events
 * to the service's receiver (signed), and the service reads the simulator's API.
 */
export async function startHarness(
  databaseUrl: string,
  options: {
    env?: Record<string, string | undefined>;
    faults?: Partial<FaultConfig>;
    seed?: number;
    deliver?: boolean;
    /** Pozy's own settings (its rate limit, its window), beside the test's defaults. */
    simulator?: Partial<Pick<SimulatorOptions, 'rateLimitPerMinute' | 'rateLimitWindowMs' | 'otherClientPerMinute' | 'clockOffsetMs'>>;
    /** Runs once the simulator is up, before the service starts: a workspace that exists before the first start. */
    before?: (sim: PozySimulator) => void;
  } = {},
): Promise<Harness> {
  const sim = await PozySimulator.start({
    apiKey: 'sk_sim_test',
    seed: options.seed ?? 7,
    // 10 s becomes 1 ms: the retry ladder runs in test time.
    timeScale: 10_000,
    faults: options.faults,
    rateLimitPerMinute: 100_000,
    webhook: { url: 'http://127.0.0.1:9/not-yet', secret: TEST_WEBHOOK_SECRET },
    ...options.simulator,
  });
  options.before?.(sim);
  const service = await startService(databaseUrl, {
    POZY_API_URL: sim.url,
    POZY_API_KEY: sim.apiKey,
    POZY_TIMEOUT_MS: '1000',
    POZY_RATE_LIMIT_PER_MINUTE: '100000',
    RECONCILE_COALESCE_WINDOW_MS: '1000',
    // The simulator's clock is this machine's: no skew to allow for.
    RECONCILE_CLOCK_SKEW_MS: '0',
    // Nor do its reads lag its writes unless a test makes them (apiReadLagMs): a 404 is believed at once.
    READ_LAG_GRACE_MS: '0',
    // Generous, so that a fault switched off by a test is always met by one of the client's own retries.
    POZY_MAX_RETRIES: '8',
    ADMIN_TOKEN: HARNESS_ADMIN_TOKEN,
    ...options.env,
  });
  sim.setWebhookUrl(options.deliver === false ? undefined : `${service.baseUrl}/webhooks/pozy`);
  const seen = { postIds: new Set<string>(), profileIds: new Set<string>() };
  const unsubscribe = sim.world.onEvent((event: PozyEvent) => {
    if (event.post) seen.postIds.add(event.post.id);
    if (event.account?.profileId) seen.profileIds.add(event.account.profileId);
  });
  return {
    sim,
    service,
    seen,
    close: async () => {
      unsubscribe();
      await sim.stop();
      await service.close();
    },
  };
}

/** Waits until every delivery was made and every reconcile it caused has run. */
export async function settled(harness: Harness, timeoutMs = 30_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the simulator still had deliveries after ${timeoutMs} ms`)), timeoutMs);
  });
  await Promise.race([harness.sim.idle(), deadline]).finally(() => clearTimeout(timer));
  // A delivery acknowledged through the spool (a busy database) is in neither the events nor the backlog until stored.
  const spool = harness.service.app.get(AckSpool);
  await waitFor('the spool to be stored', async () => (spool.counts().pending === 0 ? true : undefined), timeoutMs);
  await waitFor('the mirror to catch up', async () => ((await backlog(harness.service.pool)) === 0 ? true : undefined), timeoutMs);
}

export async function backlog(pool: Pool): Promise<number> {
  return (await reconcileRequests(pool)).length + (await queuedJobs(pool)).length;
}

/** Pozy API calls the simulator answered for one route, any status. */
export function apiCalls(harness: Pick<Harness, 'sim'>, route: string): number {
  return Object.values(harness.sim.stats().api.byRoute[route] ?? {}).reduce((sum, n) => sum + n, 0);
}
