/**
 * The query bench's yardstick: the least a mirror's list endpoint can do. One fixed keyset statement over the post
 * table, no filters, no validation, no profile lookup, reading the columns of the whole post that pozy-sync answers.
 * Run by query.ts as its own process, with DATABASE_URL and PORT.
 */
import Fastify from 'fastify';
import { Pool } from 'pg';
import { serveUntilStopped } from './processes';

async function main(): Promise<void> {
  // A stand-alone script run only by the bench, so it reads its two settings directly.
  const { DATABASE_URL, PORT } = process.env;
  const pool = new Pool({ connectionString: DATABASE_URL, max: 10 });
  const app = Fastify();
  app.get('/posts', async () => {
    const { rows } = await pool.query<{ id: string }>(
      `SELECT id, status, title, content, scheduled_for, published_at, platforms, tags, hashtags, visibility, extra, pozy_created_at,
              pozy_updated_at, last_event_at, synced_at, deleted_at, sequence
         FROM post WHERE deleted_at IS NULL ORDER BY id LIMIT 51`,
    );
    return { data: rows.slice(0, 50), nextCursor: rows.length > 50 ? rows[49].id : null };
  });
  await serveUntilStopped(app, pool, Number(PORT));
}

void main();
