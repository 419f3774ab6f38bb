import { Tracing } from '../tracing/tracing.service';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { budgetKeyId } from './budget/budget-key';
import { BudgetRepository } from './budget/budget.repository';
import { PozyClients, PozyWorkspaceAccess } from './pozy-clients.service';
import { PozyClock } from './pozy-clock.service';

// No request is sent: nothing here takes from a budget, so the repository is never called.
const config = AppConfig.fromEnvironment({ POZY_API_KEY: 'sk_env', POZY_API_URL: 'https://api.pozy.test', POZY_RATE_LIMIT_PER_MINUTE: '600' });
const metrics = new MetricsService();
const clock = new PozyClock(config, metrics);
const makeClients = () => new PozyClients(config, metrics, {} as BudgetRepository, clock, Tracing.off(), { emit: async () => undefined } as never);
const ws = (id: string, apiKey: string, extra: Partial<PozyWorkspaceAccess> = {}): PozyWorkspaceAccess => ({
  id,
  apiKey,
  apiUrl: 'https://api.pozy.test',
  rateLimitPerMinute: 600,
  ...extra,
});

describe('PozyClients', () => {
  let clients: PozyClients;
  beforeEach(() => {
    clients = makeClients();
  });
  afterEach(() => clients.onApplicationShutdown());

  it('keys a budget by the SHA-256 of its key, never the key', () => {
    expect(budgetKeyId('sk_a')).toMatch(/^[0-9a-f]{32}$/);
    expect(budgetKeyId('sk_a')).not.toBe(budgetKeyId('sk_b'));
    expect(clients.budgetOf('sk_a').keyId).toBe(budgetKeyId('sk_a'));
  });

  it('gives workspaces of one key and URL one client and one budget; another key its own', () => {
    const a1 = clients.forWorkspace(ws('a1', 'sk_a'));
    const a2 = clients.forWorkspace(ws('a2', 'sk_a', { apiUrl: 'https://api.pozy.test/' }));
    const b = clients.forWorkspace(ws('b', 'sk_b'));
    expect(a2).toBe(a1);
    expect(b).not.toBe(a1);
    expect(b.keyBudget).not.toBe(a1.keyBudget);
    // Another URL of the same key: another client, the key's one budget.
    const staging = clients.forWorkspace(ws('a3', 'sk_a', { apiUrl: 'https://api.pozy.test/v2' }));
    expect(staging).not.toBe(a1);
    expect(staging.keyBudget).toBe(a1.keyBudget);
  });

  it("holds the smallest limit of a key's workspaces, and lets go of a workspace's when it leaves or moves", () => {
    const budget = clients.forWorkspace(ws('a1', 'sk_a', { rateLimitPerMinute: 300 })).keyBudget;
    clients.forWorkspace(ws('a2', 'sk_a', { rateLimitPerMinute: 100 }));
    expect(budget.perWindow).toBe(100);
    clients.setRateLimit('a2', 'sk_a', 200);
    expect(budget.perWindow).toBe(200);
    // a2 moves to key b: key a holds a1's figure, key b a2's.
    const b = clients.forWorkspace(ws('a2', 'sk_b', { rateLimitPerMinute: 50 })).keyBudget;
    expect(budget.perWindow).toBe(300);
    expect(b.perWindow).toBe(50);
    clients.forWorkspace(ws('a3', 'sk_a', { rateLimitPerMinute: 10 }));
    clients.forget('a3');
    expect(budget.perWindow).toBe(300);
    expect(() => clients.setRateLimit('a1', 'sk_a', 0)).toThrow(RangeError);
  });

  it('replaces a workspace’s client when its key or URL changes, and keeps one another workspace still uses', () => {
    const first = clients.forWorkspace(ws('a1', 'sk_a'));
    clients.forWorkspace(ws('a2', 'sk_a'));
    const moved = clients.forWorkspace(ws('a1', 'sk_c'));
    expect(moved).not.toBe(first);
    // a2 still uses the first client: it stays cached.
    expect(clients.forWorkspace(ws('a2', 'sk_a'))).toBe(first);
    clients.forget('a2');
    expect(clients.forWorkspace(ws('a2', 'sk_a'))).not.toBe(first);
  });

  it("builds the environment's workspace from the configuration", () => {
    expect(clients.defaultAccess()).toEqual({ id: 'default', apiKey: 'sk_env', apiUrl: 'https://api.pozy.test', rateLimitPerMinute: 600 });
  });
});
