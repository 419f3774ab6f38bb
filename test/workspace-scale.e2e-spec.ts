import { Client } from 'pg';
import { withIndexesDeferred } from './support/bulk-load';
import { RunningService, waitFor } from './support/service';
import { timeCalls } from './support/timing';
import { ServiceSpec, startSpec } from './support/spec';

const WORKSPACES = 1_000;
const POSTS = 1_000_000;
const CALLS = 20;
const ADMIN = 'admin_workspace_scale';

async function time(what: string, call: () => Promise<Response>): Promise<string> {
  const { p50, max } = await timeCalls(call, CALLS);
  return `  ${what.padEnd(30)} p50 ${p50.toFixed(1).padStart(7)} ms   max ${max.toFixed(1).padStart(7)} ms\n`;
}

/**
 * A deployment of 1,000 workspaces (registered with SQL: what POST /admin/workspaces stores, without asking a Pozy
 * for each) over a million posts: the status, its page, /metrics and the workspace list answer in bounded size, and
 * every replica holds the registry. Times are printed, not asserted.
 */
describe('1,000 workspaces and a million posts', () => {
  let spec: ServiceSpec;
  let service: RunningService;
  const get = (path: string, token?: string) => fetch(`${service.baseUrl}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  beforeAll(async () => {
    spec = await startSpec('workspace_scale', {
      env: {
        ROLE: 'api',
        STATUS_CACHE_MS: '0',
        ADMIN_TOKEN: ADMIN,
        POZY_API_KEY: undefined,
        POZY_WEBHOOK_SECRET: undefined,
      },
    });
    service = spec.service;
    const client = new Client({ connectionString: spec.db.url });
    await client.connect();
    try {
      // Secrets in plaintext, as a database written before SECRETS_ENCRYPTION_KEY was set holds them: they open as they are.
      await client.query(
        `INSERT INTO workspace (id, name, api_key, api_url, webhook_secret, manage_webhook, created_at)
         SELECT 'ws-' || lpad(i::text, 4, '0'), 'Client ' || i, 'sk_scale_' || i, 'http://127.0.0.1:9', 'secret-of-workspace-' || i, false,
                now() - (${WORKSPACES} - i) * interval '1 minute'
           FROM generate_series(1, ${WORKSPACES}) i`,
      );
      await withIndexesDeferred(client, ['post'], async () => {
        await client.query(
          `INSERT INTO post (workspace_id, id, status, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                             synced_at, read_started_at, read_id, sequence)
           SELECT 'ws-' || lpad((1 + i % ${WORKSPACES})::text, 4, '0'), lpad(to_hex(i), 24, '0'), 'published', 'Post #' || i, '[]'::jsonb,
                  ARRAY[]::text[], ARRAY['instagram'], now() - interval '1 day', now(), now(), now(),
                  '00000000-0000-4000-8000-000000000000', 1
             FROM generate_series(1, ${POSTS}) i`,
        );
      });
      // Every tenth workspace's import failed, and a hundred of those were listed whole by a sweep since.
      await client.query(
        `INSERT INTO sweep_run (workspace_id, id, kind, trigger, status, phase, started_at, finished_at, error)
         SELECT 'ws-' || lpad(i::text, 4, '0'), gen_random_uuid(), 'import', 'auto', 'failed', 'posts', now() - interval '1 hour', now(), 'GET /v1/posts: unexpected HTTP 401'
           FROM generate_series(10, ${WORKSPACES}, 10) i`,
      );
      await client.query(
        `INSERT INTO sweep_run (workspace_id, id, kind, trigger, status, phase, started_at, finished_at)
         SELECT 'ws-' || lpad(i::text, 4, '0'), gen_random_uuid(), 'sweep', 'admin', 'succeeded', 'done', now(), now()
           FROM generate_series(100, ${WORKSPACES}, 100) i`,
      );
      await client.query('VACUUM ANALYZE post, workspace, sweep_run');
    } finally {
      await client.end();
    }
  }, 300_000);

  afterAll(async () => {
    await spec?.close();
  });

  it('summarises every workspace in the status, bounded, and answers each view quickly', async () => {
    const summary = await waitFor(
      'the registry to hold the 1,000 workspaces',
      async () => {
        const body = (await (await get('/sync/status')).json()) as { workspaces: { total: number; byState: Record<string, number> } };
        return body.workspaces.total === WORKSPACES ? body.workspaces : undefined;
      },
      30_000,
      200,
    );
    expect(summary.byState).toEqual({ active: WORKSPACES, paused: 0, removing: 0, detached: 0 });
    const status = await (await get('/sync/status')).text();
    // Bounded: no list of the workspaces in it.
    expect(status.length).toBeLessThan(20_000);
    expect(await (await get('/')).text()).toContain('1,000 workspaces: 1,000 active.');
    const metrics = await (await get('/metrics')).text();
    expect(metrics).not.toContain('ws-0001');
    // One series for every workspace's import, whatever their number.
    expect(metrics).toMatch(/^pozy_sync_workspaces_import_failed 90$/m);
    const page = (await (await get('/admin/workspaces?limit=100', ADMIN)).json()) as { data: { id: string }[]; nextCursor: string };
    expect(page.data).toHaveLength(100);
    expect(page.data[0].id).toBe('ws-0001');
    expect(page.data.some((w) => JSON.stringify(w).includes('sk_scale_'))).toBe(false);
    process.stdout.write(
      `workspace-scale: ${WORKSPACES} workspaces, ${POSTS} posts (${CALLS} calls each, after one to warm up)\n` +
        (await time('GET /sync/status', () => get('/sync/status'))) +
        (await time('GET /', () => get('/'))) +
        (await time('GET /metrics', () => get('/metrics'))) +
        (await time('GET /admin/workspaces', () => get('/admin/workspaces?limit=100', ADMIN))) +
        (await time('GET /admin/workspaces/:id', () => get('/admin/workspaces/ws-0500', ADMIN))) +
        (await time('GET /posts?workspace=ws-0500', () => get('/posts?workspace=ws-0500&limit=50', ADMIN))),
    );
  }, 120_000);
});
