import type { Pool } from 'pg';
import { budgetKeyId } from '../src/pozy/budget/budget-key';
import { PozyRateLimitedError } from '../src/pozy/pozy-errors';
import { PozyClient } from '../src/pozy/pozy-client.service';
import { PozyClients, PozyWorkspaceAccess } from '../src/pozy/pozy-clients.service';
import { PozySimulator } from '../simulator/simulator';
import type { PozyWorkspace } from '../simulator/workspace';
import { createTestDatabase, TestDatabase } from './support/database';
import { RunningService, startService } from './support/service';

/** A test-sized Pozy minute, long beside the half second the budget counts past its window (as in budget.e2e-spec). */
const WINDOW_MS = 4_000;
const LIMIT = 20;

/** Reads as fast as the client's budget lets `loops` callers, until `until`; the reads answered. */
async function hammer(client: PozyClient, until: number, loops = 6): Promise<number> {
  let answered = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (Date.now() < until) {
        await client.listAllAccounts('realtime');
        answered += 1;
      }
    }),
  );
  return answered;
}

/** 429s a key's workspace answered, the window's and injected ones alike. */
const rateLimitedAnswers = (ws: PozyWorkspace) => Object.values(ws.stats().api.byRoute).reduce((sum, byStatus) => sum + (byStatus['429'] ?? 0), 0);

describe('a Pozy client and a shared budget per API key', () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  let replicas: RunningService[];
  let pool: Pool;
  const keys: string[] = [];

  const access = (id: string, apiKey: string, rateLimitPerMinute = LIMIT): PozyWorkspaceAccess => ({
    id,
    apiKey,
    apiUrl: sim.url,
    rateLimitPerMinute,
  });
  const addKey = (apiKey: string, rateLimitPerMinute = LIMIT) => {
    keys.push(apiKey);
    return sim.addWorkspace({ apiKey, rateLimitPerMinute, seedExisting: { posts: 20, accounts: 8 } });
  };

  beforeAll(async () => {
    db = await createTestDatabase('pozy_keys');
    sim = await PozySimulator.start({ apiKey: 'sk_env_key_for_pozy_keys', rateLimitWindowMs: WINDOW_MS });
    keys.push(sim.apiKey);
    const env = {
      ROLE: 'api',
      POZY_API_URL: sim.url,
      POZY_API_KEY: sim.apiKey,
      POZY_RATE_LIMIT_PER_MINUTE: String(LIMIT),
      POZY_RATE_LIMIT_WINDOW_MS: String(WINDOW_MS),
      STATUS_CACHE_MS: '0',
    };
    // Two replicas of one deployment: each has its own PozyClients, and they share the budgets' rows.
    replicas = [await startService(db.url, env), await startService(db.url, env)];
    pool = db.pool(2);
  }, 60_000);

  afterAll(async () => {
    await pool?.end();
    for (const replica of replicas ?? []) await replica.close();
    await sim?.stop();
    await db?.drop();
  });

  const clientsOf = (replica: RunningService) => replica.app.get(PozyClients);

  it('lets two keys each proceed at their own limit at once', async () => {
    const [a, b] = [addKey('sk_two_keys_a'), addKey('sk_two_keys_b')];
    const clients = clientsOf(replicas[0]);
    const clientA = clients.forWorkspace(access('two-a', a.apiKey));
    const clientB = clients.forWorkspace(access('two-b', b.apiKey));
    expect(clientB.keyBudget).not.toBe(clientA.keyBudget);
    const until = Date.now() + 2.5 * WINDOW_MS;
    const [readsA, readsB] = await Promise.all([hammer(clientA, until), hammer(clientB, until)]);
    const [mostA, mostB] = [a.mostAcceptedInWindow(WINDOW_MS), b.mostAcceptedInWindow(WINDOW_MS)];
    process.stdout.write(
      `two keys at once: key A ${readsA} reads (at most ${mostA} in a window), key B ${readsB} (at most ${mostB}), limit ${LIMIT} each; ` +
        `429s ${rateLimitedAnswers(a)} + ${rateLimitedAnswers(b)}\n`,
    );
    expect([mostA, mostB].every((most) => most <= LIMIT)).toBe(true);
    expect(rateLimitedAnswers(a) + rateLimitedAnswers(b)).toBe(0);
    // Both near their limit in the same windows: one shared bucket would have held them to LIMIT together.
    expect(Math.min(mostA, mostB)).toBeGreaterThanOrEqual(LIMIT * 0.75);
    const { rows } = await pool.query<{ key_id: string }>('SELECT key_id FROM pozy_budget WHERE key_id = ANY($1)', [
      [a.apiKey, b.apiKey].map(budgetKeyId),
    ]);
    expect(rows).toHaveLength(2);
  }, 60_000);

  it('pauses only the key that met a 429 storm: the other key reads on, none of its requests waiting on the pause', async () => {
    const [a, b] = [addKey('sk_storm_a'), addKey('sk_storm_b', 600)];
    const clients = clientsOf(replicas[0]);
    const clientA = clients.forWorkspace(access('storm-a', a.apiKey));
    const clientB = clients.forWorkspace(access('storm-b', b.apiKey, 600));
    // A Retry-After longer than a job waits inline: A's budget pauses for a minute and its caller fails at once.
    a.setFaults({ api429Rate: 1, api429RetryAfter: '60' });
    await expect(clientA.listAllAccounts('realtime')).rejects.toBeInstanceOf(PozyRateLimitedError);
    const pausedUntil = (await clientA.keyBudget.status()).pausedUntil;
    expect(pausedUntil).not.toBeNull();
    // A's callers now wait on its pause (on both replicas), while B reads.
    const stuck = [clientA, clientsOf(replicas[1]).forWorkspace(access('storm-a', a.apiKey))].map((client) =>
      client.listAllAccounts('realtime').then(
        () => undefined,
        () => undefined,
      ),
    );
    const requestsOfABefore = a.stats().api.requests;
    const reads = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? clientB.listAllAccounts('realtime') : clientB.listPostsPage(0, 10, 'bulk'))),
    );
    const statusB = await clientB.keyBudget.status();
    const statusA = await clientA.keyBudget.status();
    process.stdout.write(
      `429 storm on key A (paused until ${pausedUntil?.toISOString()}, ${stuck.length} callers waiting): key B read ${reads.filter((r) => r.status === 'fulfilled').length} of ` +
        `${reads.length}, 429s from B's key ${rateLimitedAnswers(b)}, B paused ${statusB.pausedUntil === null ? 'never' : 'yes'}; ` +
        `A's requests meanwhile ${a.stats().api.requests - requestsOfABefore}\n`,
    );
    expect(reads.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(rateLimitedAnswers(b)).toBe(0);
    expect(statusB.pausedUntil).toBeNull();
    // B finished while A's pause still stood, and A sent nothing meanwhile: B did not wait for it.
    expect(statusA.pausedUntil?.getTime()).toBe(pausedUntil?.getTime());
    expect(statusA.pausedUntil!.getTime()).toBeGreaterThan(Date.now());
    expect(a.stats().api.requests).toBe(requestsOfABefore);
    // Lift A's pause with the faults off: its waiting callers get their answers.
    a.setFaults({ api429Rate: 0 });
    await clientA.keyBudget.resume();
    await Promise.all(stuck);
  }, 60_000);

  it('keeps two replicas and two workspaces of one key under its limit together, the smallest of their limits holding', async () => {
    const shared = addKey('sk_shared_key');
    const [first, second] = replicas.map(clientsOf);
    // The same key and URL: one client in a replica. One workspace says twice the limit; the smallest holds.
    const w1 = first.forWorkspace(access('shared-1', shared.apiKey, 2 * LIMIT));
    const w2 = first.forWorkspace(access('shared-2', shared.apiKey, LIMIT));
    expect(w2).toBe(w1);
    expect(w1.keyBudget.perWindow).toBe(LIMIT);
    const w3 = second.forWorkspace(access('shared-3', shared.apiKey, 2 * LIMIT));
    second.setRateLimit('shared-4', shared.apiKey, LIMIT);
    expect(w3.keyBudget.perWindow).toBe(LIMIT);
    const until = Date.now() + 3 * WINDOW_MS;
    const [reads1, reads3] = await Promise.all([hammer(w1, until), hammer(w3, until)]);
    const most = shared.mostAcceptedInWindow(WINDOW_MS);
    process.stdout.write(
      `one key, two replicas: ${reads1} + ${reads3} reads, at most ${most} in any ${WINDOW_MS} ms window (limit ${LIMIT}); ` +
        `429s for the limit ${shared.stats().api.rateLimited}\n`,
    );
    // Pozy allows exactly LIMIT a window to this key: together above it, they would have met 429s.
    expect(most).toBeLessThanOrEqual(LIMIT);
    expect(shared.stats().api.rateLimited).toBe(0);
    expect(Math.min(reads1, reads3)).toBeGreaterThan(0);
    expect(most).toBeGreaterThanOrEqual(LIMIT * 0.75);
  }, 60_000);

  it("keeps the environment's key budget as /sync/status shows it, and never an API key in pozy_budget", async () => {
    await clientsOf(replicas[0]).forWorkspace(clientsOf(replicas[0]).defaultAccess()).listAllAccounts('realtime');
    const status = (await (await fetch(`${replicas[0].baseUrl}/sync/status`)).json()) as { pozyBudget: { limit: number } };
    expect(status.pozyBudget.limit).toBe(LIMIT);
    const { rows } = await pool.query<{ row: string; key_id: string }>('SELECT key_id, row_to_json(b)::text AS row FROM pozy_budget b');
    expect(rows.map((r) => r.key_id).sort()).toEqual(keys.map(budgetKeyId).sort());
    for (const { row, key_id } of rows) {
      expect(key_id).toMatch(/^[0-9a-f]{32}$/);
      for (const key of keys) expect(row).not.toContain(key);
    }
  }, 30_000);
});
