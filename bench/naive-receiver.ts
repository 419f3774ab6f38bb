/**
 * The reconcile scenario's yardstick: what a typical hand-written Pozy integration does. For every webhook it
 * reads the post from Pozy (`GET /v1/posts/{id}`) and writes it with a plain UPSERT, then answers 200 (the
 * common "process in the handler" shape). No signature check, no deduplication, no coalescing, no retry and no
 * guard: one API call per event, and an older read that finishes last overwrites a newer one.
 * Run by the bench as its own process, with DATABASE_URL, PORT, POZY_API_URL and POZY_API_KEY.
 */
import Fastify from 'fastify';
import { Pool } from 'pg';
import { serveUntilStopped } from './processes';

interface PozyPost {
  _id: string;
  status: string;
  content?: string;
  scheduledFor?: string;
  publishedAt?: string;
  platforms: unknown[];
  createdAt: string;
  updatedAt: string;
}

async function main(): Promise<void> {
  // A stand-alone script run only by the bench, so it reads its settings directly.
  const { DATABASE_URL, PORT, POZY_API_URL, POZY_API_KEY } = process.env;
  // pg's default pool size, as a typical integration leaves it.
  const pool = new Pool({ connectionString: DATABASE_URL });
  await pool.query(`
    CREATE TABLE IF NOT EXISTS post (
      id text PRIMARY KEY, status text NOT NULL, content text, scheduled_for timestamptz(3), published_at timestamptz(3),
      platforms jsonb NOT NULL, pozy_created_at timestamptz(3), pozy_updated_at timestamptz(3), synced_at timestamptz(3) NOT NULL
    )`);
  const app = Fastify({ bodyLimit: 1024 * 1024 });
  app.post('/webhooks/pozy', async (request, reply) => {
    const body = request.body as { post?: { id?: string } };
    const id = body.post?.id;
    if (!id) return { received: true };
    const response = await fetch(`${POZY_API_URL}/v1/posts/${encodeURIComponent(id)}`, {
      headers: { authorization: `Bearer ${POZY_API_KEY}`, accept: 'application/json' },
    });
    if (!response.ok) return reply.code(502).send({ error: `Pozy answered ${response.status}` });
    const { post } = (await response.json()) as { post: PozyPost };
    await pool.query(
      `INSERT INTO post (id, status, content, scheduled_for, published_at, platforms, pozy_created_at, pozy_updated_at, synced_at)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, now())
       ON CONFLICT (id) DO UPDATE
          SET status = excluded.status, content = excluded.content, scheduled_for = excluded.scheduled_for,
              published_at = excluded.published_at, platforms = excluded.platforms,
              pozy_created_at = excluded.pozy_created_at, pozy_updated_at = excluded.pozy_updated_at, synced_at = now()`,
      [
        post._id,
        post.status,
        post.content ?? null,
        post.scheduledFor ?? null,
        post.publishedAt ?? null,
        JSON.stringify(post.platforms),
        post.createdAt,
        post.updatedAt,
      ],
    );
    return { received: true };
  });
  await serveUntilStopped(app, pool, Number(PORT));
}

void main();
