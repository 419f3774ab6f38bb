import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { load } from 'js-yaml';
import { Client } from 'pg';
import { LockKey } from '../src/database/advisory-lock';
import { HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { metricTotal, parseMetrics } from './support/metrics';
import { waitFor } from './support/service';
import { TestSubscriber } from './support/subscriber';
import { SimulatorSpec, startSpec } from './support/spec';

const PROMTOOL = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path));
const DEPLOY = resolve(__dirname, '..', 'deploy');
const ALERTS = join(DEPLOY, 'prometheus', 'alerts.yml');
const ALERT_TESTS = join(DEPLOY, 'prometheus', 'alerts.test.yml');
const DASHBOARD = join(DEPLOY, 'grafana', 'pozy-sync.json');
const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };

// On a laptop without promtool they are skipped, and say so; under CI (.ci/run installs it) its absence fails them.
const maybe = PROMTOOL || process.env.CI ? describe : describe.skip;
if (!PROMTOOL)
  process.stdout.write(`promtool tests ${process.env.CI ? 'FAIL' : 'skipped'}: promtool is not installed (apt-get install prometheus)\n`);

/** promtool's exit code and output; `input` goes to its standard input. */
function promtool(args: string[], input?: string): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    const child = execFile(PROMTOOL ?? 'promtool', args, { cwd: join(DEPLOY, 'prometheus') }, (error, stdout, stderr) =>
      done({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

interface RuleGroup {
  rules: Array<{ record?: string; alert?: string; expr: string }>;
}
interface AlertTest {
  alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }>;
}
const rules = (): RuleGroup['rules'] => (load(readFileSync(ALERTS, 'utf8')) as { groups: RuleGroup[] }).groups.flatMap((g) => g.rules);

/** Every metric a PromQL expression names: pozy-sync's own (`pozy_sync_…`) and its recording rules (`pozy_sync:…`). */
const namesIn = (expr: string): string[] => [...expr.matchAll(/\bpozy_sync[_:][a-zA-Z0-9_:]*/g)].map((m) => m[0]);

/** The metric families /metrics declares (`# TYPE`), with the series names a histogram's family stands for. */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) names.add(`${name}${suffix}`);
  }
  return names;
}

maybe('alert rules, dashboard and /metrics, checked against the service', () => {
  let harness: SimulatorSpec;
  let subscriber: TestSubscriber;
  let text = '';

  beforeAll(async () => {
    harness = await startSpec('observability_files', { env: { STATUS_CACHE_MS: '0' }, simulator: {} });
    subscriber = await TestSubscriber.start();
    const created = await fetch(`${harness.service.baseUrl}/admin/subscriptions`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify({ url: subscriber.url, eventTypes: ['post.changed'] }),
    });
    expect(created.status).toBe(201);
    // One post through the whole way: its event, the read, the write, its feed entry and its notification.
    const profile = harness.sim.world.createProfile('Observed');
    const account = harness.sim.world.connectAccount(profile._id, 'linkedin', 'observed');
    harness.sim.world.createPost({ content: 'observed', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    await waitFor('the notification', async () => (subscriber.received.some((r) => r.json.type === 'post.changed') ? true : undefined), 60_000);
    // The deliverer counts an attempt once its batch is recorded, just after the subscriber answered.
    text = await waitFor(
      'the delivery counted',
      async () => {
        const body = await (await fetch(`${harness.service.baseUrl}/metrics`)).text();
        return metricTotal(parseMetrics(body), 'pozy_sync_write_to_notification_seconds_count') > 0 ? body : undefined;
      },
      60_000,
    );
  }, 120_000);

  afterAll(async () => {
    await subscriber?.close();
    await harness?.close();
  });

  it('measures an event from its delivery to the mirror, the feed and the subscriber', async () => {
    const m = parseMetrics(text);
    expect(metricTotal(m, 'pozy_sync_event_to_mirror_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(m.get('pozy_sync_event_to_mirror_seconds_count{type="post.scheduled"}')).toBeGreaterThanOrEqual(1);
    expect(metricTotal(m, 'pozy_sync_write_to_feed_position_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(m.get('pozy_sync_write_to_notification_seconds_count{subscriber="healthy"}')).toBeGreaterThanOrEqual(1);
    // Every request to Pozy is timed, by the same route and status it is counted by.
    const reads = m.get('pozy_sync_pozy_api_requests_total{route="GET /v1/posts/:id",status="200"}') ?? 0;
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(m.get('pozy_sync_pozy_api_request_duration_seconds_count{route="GET /v1/posts/:id",status="200"}')).toBe(reads);
    // A write's entry waits a moment for its position: once the sequencer has placed every entry, nothing waits.
    await waitFor('every change placed in the feed', async () => {
      const now = parseMetrics(await (await fetch(`${harness.service.baseUrl}/metrics`)).text());
      return now.get('pozy_sync_change_feed_unplaced_seconds') === 0 ? true : undefined;
    });
    expect(m.get('pozy_sync_import_failed')).toBe(0);
    expect(m.get('pozy_sync_workspaces_import_failed')).toBe(0);
    expect(m.get('pozy_sync_pozy_budget_paused_seconds')).toBe(0);
  });

  it('serves /metrics that promtool check metrics passes', async () => {
    const { code, output } = await promtool(['check', 'metrics'], text);
    expect(output.trim()).toBe('');
    expect(code).toBe(0);
  });

  it('ships alert rules promtool checks, each with a firing case and the healthy case in its unit tests', async () => {
    const checked = await promtool(['check', 'rules', 'alerts.yml']);
    expect(checked.output).toContain('SUCCESS');
    expect(checked.code).toBe(0);
    const tested = await promtool(['test', 'rules', 'alerts.test.yml']);
    expect(tested.output).toContain('SUCCESS');
    expect(tested.code).toBe(0);

    const alerts = rules().flatMap((r) => (r.alert ? [r.alert] : []));
    const cases = (load(readFileSync(ALERT_TESTS, 'utf8')) as { tests: AlertTest[] }).tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const alert of alerts) {
      const ofAlert = cases.filter((c) => c.alertname === alert);
      expect({ alert, fires: ofAlert.some((c) => (c.exp_alerts ?? []).length > 0) }).toEqual({ alert, fires: true });
      expect({ alert, silent: ofAlert.some((c) => (c.exp_alerts ?? []).length === 0) }).toEqual({ alert, silent: true });
    }
  });

  it('names in every alert, recording rule and dashboard panel only metrics the service exports', () => {
    const known = exported(text);
    const recorded = new Set(rules().flatMap((r) => (r.record ? [r.record] : [])));
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
    const queries = [
      ...rules().map((r) => ({ where: r.alert ?? r.record ?? '', expr: r.expr })),
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
    ];
    expect(dashboard.panels.filter((p) => p.targets?.length).length).toBeGreaterThanOrEqual(15);
    const unknown = queries.flatMap(({ where, expr }) =>
      namesIn(expr).flatMap((name) => (known.has(name) || recorded.has(name) ? [] : [`${where}: ${name}`])),
    );
    expect(unknown).toEqual([]);
    // And the check itself sees a name that is not exported.
    expect(known.has('pozy_sync_event_to_mirror_seconds_bucket')).toBe(true);
    expect(known.has('pozy_sync_no_such_metric')).toBe(false);
  });
  it('shows how long a feed entry has waited for its position while no sequencer can place it', async () => {
    // The test holds the sequencers' lock, so the entry it writes stays unplaced, as behind a stuck sequencer.
    const client = new Client({ connectionString: harness.db.url });
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [LockKey.ChangeSequencer]);
      await client.query(
        `INSERT INTO change (workspace_id, type, resource_id, sequence, profile_ids, platforms, data, changed_at)
         VALUES ('default', 'post.changed', 'stuck_post', 1, '{}', '{}', '{}'::jsonb, now() - interval '90 seconds')`,
      );
      const waited = await waitFor(
        'the unplaced entry on /metrics',
        async () => {
          const value = parseMetrics(await (await fetch(`${harness.service.baseUrl}/metrics`)).text()).get('pozy_sync_change_feed_unplaced_seconds');
          return value !== undefined && value > 0 ? value : undefined;
        },
        30_000,
      );
      expect(waited).toBeGreaterThanOrEqual(90);
      await client.query('SELECT pg_advisory_unlock($1)', [LockKey.ChangeSequencer]);
      // Once the lock is free the sequencer places it, and the gauge falls back to 0.
      await waitFor(
        'the entry placed',
        async () =>
          parseMetrics(await (await fetch(`${harness.service.baseUrl}/metrics`)).text()).get('pozy_sync_change_feed_unplaced_seconds') === 0
            ? true
            : undefined,
        60_000,
      );
    } finally {
      await client.end();
    }
  });
});
