/**
 * The notifications scenario's yardstick: the outbox relay most teams write first. It takes the oldest pending
 * notification of one subscription (`FOR UPDATE SKIP LOCKED`, one row per transaction), POSTs it signed exactly as
 * pozy-sync does (same body, same Standard Webhooks headers), marks it delivered and commits; when nothing is
 * pending it sleeps RELAY_POLL_MS. No concurrency, no attempt history, no backoff, no ordering rule.
 * Run by the bench as its own process, with DATABASE_URL, SUBSCRIPTION_ID, TARGET_URL, SECRET and RELAY_POLL_MS.
 */
import { Pool } from 'pg';
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';

async function main(): Promise<void> {
  // A stand-alone script run only by the bench, so it reads its settings directly.
  const { DATABASE_URL, SUBSCRIPTION_ID, TARGET_URL, SECRET, RELAY_POLL_MS } = process.env;
  const pool = new Pool({ connectionString: DATABASE_URL, max: 2 });
  const signer = new Webhook(SECRET!);
  const pollMs = Number(RELAY_POLL_MS ?? 100);
  let stopped = false;
  process.on('SIGTERM', () => (stopped = true));
  process.on('SIGINT', () => (stopped = true));
  while (!stopped) {
    const client = await pool.connect();
    let sent = false;
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string; type: string; created_at: Date; data: unknown }>(
        `SELECT id, type, created_at, data FROM notification
          WHERE subscription_id = $1 AND state = 'pending'
          ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [SUBSCRIPTION_ID],
      );
      if (rows[0]) {
        const n = rows[0];
        const body = JSON.stringify({ type: n.type, timestamp: n.created_at.toISOString(), data: n.data });
        const now = new Date();
        const response = await request(TARGET_URL!, {
          method: 'POST',
          body,
          headers: {
            'content-type': 'application/json',
            'webhook-id': n.id,
            'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
            'webhook-signature': signer.sign(n.id, now, body),
            'idempotency-key': n.id,
          },
        });
        await response.body.dump();
        if (response.statusCode < 300) {
          await client.query(`UPDATE notification SET state = 'delivered', delivered_at = now(), next_attempt_at = NULL WHERE id = $1`, [n.id]);
        }
        sent = true;
      }
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    if (!sent) await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  await pool.end();
}

main().catch((error: unknown) => {
  process.stderr.write(`naive relay: ${String(error)}\n`);
  process.exit(1);
});
