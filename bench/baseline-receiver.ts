/**
 * The bench's yardstick: the least a webhook receiver can do. Fastify parses the JSON and one
 * `INSERT ... ON CONFLICT DO NOTHING` stores it; no signature check, no validation, no job.
 * Run by bench.ts as its own process, with DATABASE_URL and PORT.
 */
import Fastify from 'fastify';
import { Pool } from 'pg';
import { serveUntilStopped } from './processes';

async function main(): Promise<void> {
  // A stand-alone script run only by the bench, so it reads its two settings directly.
  const { DATABASE_URL, PORT } = process.env;
  const pool = new Pool({ connectionString: DATABASE_URL, max: 20 });
  await pool.query(
    'CREATE TABLE IF NOT EXISTS pozy_event (id text PRIMARY KEY, type text NOT NULL, payload jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now())',
  );
  const app = Fastify({ bodyLimit: 1024 * 1024 });
  app.post('/webhooks/pozy', async (request) => {
    const body = request.body as { id: string; event: string };
    const { rowCount } = await pool.query('INSERT INTO pozy_event (id, type, payload) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [
      body.id,
      body.event,
      body,
    ]);
    return { received: true, duplicate: rowCount === 0 };
  });
  await serveUntilStopped(app, pool, Number(PORT));
}

void main();
