/**
 * The notifications scenario of npm run bench: change notifications from pozy-sync's outbox to a subscriber on
 * loopback (HTTP, answering 204 and checking signatures), beside a naive outbox relay (naive-relay.ts) that sends
 * the very same rows, one per transaction. pozy-sync runs as deployed (ROLE=all, built), fed by the Pozy simulator;
 * each change is a new scheduled post (a `post.scheduled` event, one read, one write, one notification).
 *
 *   latency     BENCH_NOTIFY_CHANGES (default 300) changes at BENCH_NOTIFY_RATE a second (default 100): per
 *               notification, the time from the mirror write (the post's `syncedAt`, the database's clock) to the
 *               subscriber's receipt, p50 and p99.
 *   throughput  BENCH_NOTIFY_BACKLOG (default 2000) notifications queued while the subscription is paused, then
 *               timed from release until the subscriber has them all: notifications a second.
 *
 * For the baseline runs the subscription stays paused (pozy-sync's worker leaves it alone) and the relay sends;
 * it looks for work every BENCH_NOTIFY_RELAY_POLL_MS when it found none (default 100).
 */
/* eslint-disable no-console -- a command-line report */
import { createServer, Server } from 'node:http';
import { join } from 'node:path';
import { Pool } from 'pg';
import { Webhook } from 'standardwebhooks';
import { PozySimulator } from '../simulator/simulator';
import { waitForHttp } from './net';
import { cell, intSetting, percentile, sleep, startBuiltService, startProcess, stopProcess, withDatabase } from './processes';

const SECRET = 'whsec_bench';
const API_KEY = 'sk_bench';
const ADMIN_TOKEN = 'bench_admin_token';
const RATE_LIMIT_PER_MINUTE = 100_000;
/** The subscription's signing secret, given rather than generated so the receiver can verify from the start. */
const SUBSCRIPTION_SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;

const settings = {
  changes: intSetting('BENCH_NOTIFY_CHANGES', 300),
  rate: intSetting('BENCH_NOTIFY_RATE', 100),
  backlog: intSetting('BENCH_NOTIFY_BACKLOG', 2000),
  relayPollMs: intSetting('BENCH_NOTIFY_RELAY_POLL_MS', 100),
};

/** The subscriber: answers 204 at once and remembers when each notification arrived. */
interface Receiver {
  url: string;
  /** webhook-id → arrival (ms) and the mirror write's time from the body. */
  arrivals: Map<string, { at: number; writtenAt: number }>;
  badSignatures: number;
  close(): Promise<void>;
}

async function startReceiver(secret: string): Promise<Receiver> {
  const verifier = new Webhook(secret);
  const arrivals = new Map<string, { at: number; writtenAt: number }>();
  const receiver = { arrivals, badSignatures: 0 } as Receiver;
  let count = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id']);
      // Every tenth, verified as a receiver would: the figures are of correctly signed deliveries.
      if (count++ % 10 === 0) {
        try {
          verifier.verify(body, req.headers as Record<string, string>);
        } catch {
          receiver.badSignatures += 1;
        }
      }
      const { data } = JSON.parse(body) as { data: { post: { syncedAt: string } } };
      if (!arrivals.has(id)) arrivals.set(id, { at, writtenAt: Date.parse(data.post.syncedAt) });
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('receiver is not listening');
  receiver.url = `http://127.0.0.1:${address.port}/hooks`;
  receiver.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return receiver;
}

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(5);
  }
}

interface Figures {
  name: string;
  perSecond: number;
  p50: number;
  p99: number;
}

export async function runNotifyScenario(serverUrl: string): Promise<void> {
  console.log(
    `notifications: ${settings.changes} changes at ${settings.rate}/s for latency, a backlog of ${settings.backlog} for throughput, ` +
      `to a subscriber on loopback; baseline: a naive relay (one row per transaction, polls every ${settings.relayPollMs} ms when idle)`,
  );
  const sim = await PozySimulator.start({
    apiKey: API_KEY,
    seed: 43,
    rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
    webhook: { url: 'http://127.0.0.1:9/', secret: SECRET },
  });
  const receiver = await startReceiver(SUBSCRIPTION_SECRET);
  try {
    await withDatabase(serverUrl, 'pozy_bench_notify', async (databaseUrl) => {
      const { child, url: serviceUrl } = await startBuiltService(
        databaseUrl,
        { url: sim.url, apiKey: API_KEY, webhookSecret: SECRET, ratePerMinute: RATE_LIMIT_PER_MINUTE },
        {
          ADMIN_TOKEN,
          SPOOL_DIR: join('.data', 'bench-spool'),
          // The receiver listens on loopback, which is refused unless allowed.
          NOTIFY_ALLOWED_HOSTS: '127.0.0.1',
        },
      );
      const db = new Pool({ connectionString: databaseUrl, max: 4 });
      let relay: ReturnType<typeof startProcess> | undefined;
      try {
        await waitForHttp(`${serviceUrl}/health/ready`, 60_000);
        sim.setWebhookUrl(`${serviceUrl}/webhooks/pozy`);
        const profile = sim.world.createProfile('Bench notifications');
        const account = sim.world.connectAccount(profile._id, 'linkedin', 'bench.notify');
        const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
        const created = await fetch(`${serviceUrl}/admin/subscriptions`, {
          method: 'POST',
          headers: admin,
          body: JSON.stringify({ url: receiver.url, eventTypes: ['post.changed'], secret: SUBSCRIPTION_SECRET }),
        });
        const subscription = (await created.json()) as { id: string; secret: string };

        const pause = async () => {
          await db.query(`UPDATE subscription SET paused_at = now(), paused_reason = 'bench' WHERE id = $1`, [subscription.id]);
          await waitUntil(
            'the worker to let go',
            async () => (await db.query('SELECT 1 FROM subscription WHERE id = $1 AND lease_owner IS NULL', [subscription.id])).rowCount === 1,
          );
        };
        const resume = async () => {
          const response = await fetch(`${serviceUrl}/admin/subscriptions/${subscription.id}/resume`, { method: 'POST', headers: admin });
          if (!response.ok) throw new Error(`resume answered ${response.status}`);
        };
        const startRelay = () =>
          startProcess(join(__dirname, 'naive-relay.js'), {
            DATABASE_URL: databaseUrl,
            SUBSCRIPTION_ID: subscription.id,
            TARGET_URL: receiver.url,
            SECRET: subscription.secret,
            RELAY_POLL_MS: String(settings.relayPollMs),
          });
        let n = 0;
        const change = () => sim.world.createPost({ content: `bench ${n++}`, accountIds: [account._id], scheduledFor: Date.now() + 3_600_000 });

        /** Changes at the configured rate; answers each notification's write-to-receipt time. */
        const latencyRun = async (): Promise<number[]> => {
          const before = new Set(receiver.arrivals.keys());
          const start = Date.now();
          for (let i = 0; i < settings.changes; i++) {
            await sleep(Math.max(0, start + (i * 1000) / settings.rate - Date.now()));
            change();
          }
          await waitUntil('every notification', () => receiver.arrivals.size - before.size >= settings.changes);
          return [...receiver.arrivals].filter(([id]) => !before.has(id)).map(([, a]) => a.at - a.writtenAt);
        };
        /** From release until the receiver has the whole backlog. */
        const drain = async (release: () => Promise<void>): Promise<number> => {
          const before = receiver.arrivals.size;
          const started = Date.now();
          await release();
          await waitUntil('the backlog', () => receiver.arrivals.size - before >= settings.backlog);
          return (settings.backlog * 1000) / (Date.now() - started);
        };

        // Latency: the relay first (pozy-sync's worker leaves the paused subscription alone), then pozy-sync.
        process.stdout.write('  latency: relay');
        await pause();
        relay = startRelay();
        const relayLags = await latencyRun();
        await stopProcess(relay);
        relay = undefined;
        process.stdout.write(', pozy-sync');
        await resume();
        const serviceLags = await latencyRun();

        // Throughput: a backlog queued while paused, drained by each in turn.
        process.stdout.write('; throughput: queueing');
        await pause();
        const base = await pendingCount(db, subscription.id);
        for (let i = 0; i < settings.backlog; i++) change();
        await waitUntil('the backlog to be queued', async () => (await pendingCount(db, subscription.id)) - base >= settings.backlog);
        const backlogIds = (
          await db.query<{ id: string }>(`SELECT id FROM notification WHERE subscription_id = $1 AND state = 'pending'`, [subscription.id])
        ).rows.map((r) => r.id);
        process.stdout.write(', relay');
        receiver.arrivals.clear();
        const relayRate = await drain(() => {
          relay = startRelay();
          return Promise.resolve();
        });
        await stopProcess(relay!);
        relay = undefined;
        // The same rows again, as they were.
        await db.query(`UPDATE notification SET state = 'pending', next_attempt_at = now(), delivered_at = NULL WHERE id = ANY ($1)`, [backlogIds]);
        receiver.arrivals.clear();
        process.stdout.write(', pozy-sync');
        const serviceRate = await drain(resume);
        console.log(' done');
        if (receiver.badSignatures > 0) console.log(`  WARNING: ${receiver.badSignatures} notification(s) failed signature verification`);

        report([
          { name: 'pozy-sync (ROLE=all)', perSecond: serviceRate, p50: percentile(serviceLags, 50), p99: percentile(serviceLags, 99) },
          { name: 'naive relay (row per transaction)', perSecond: relayRate, p50: percentile(relayLags, 50), p99: percentile(relayLags, 99) },
        ]);
      } finally {
        if (relay) await stopProcess(relay);
        await db.end();
        await stopProcess(child);
      }
    });
  } finally {
    await receiver.close();
    await sim.stop();
  }
}

async function pendingCount(db: Pool, subscriptionId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM notification WHERE subscription_id = $1 AND state = 'pending'`, [
    subscriptionId,
  ]);
  return rows[0].n;
}

function report([service, baseline]: Figures[]): void {
  console.log('');
  console.log(
    `  ${'sender'.padEnd(36)}${'notif/s'.padStart(10)}${'write→receipt p50 ms'.padStart(22)}${'p99 ms'.padStart(10)}${'throughput vs baseline'.padStart(24)}`,
  );
  for (const f of [service, baseline]) {
    console.log(`  ${f.name.padEnd(36)}${cell(f.perSecond)}${cell(f.p50, 0, 22)}${cell(f.p99)}${cell(f.perSecond / baseline.perSecond, 2, 23)}x`);
  }
  console.log(`  latency p50 vs baseline: ${(service.p50 / baseline.p50).toFixed(2)}x; p99: ${(service.p99 / baseline.p99).toFixed(2)}x`);
}
