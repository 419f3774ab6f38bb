import { join } from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { Pool } from 'pg';
import { Migrator } from '../src/database/migrator';
import type { DB } from '../src/generated/kysely/database';
import { postAnswerExpression, postAnswerFunctionBody, postAnswerFunctionSql } from '../src/mirror/posts/post-answer';
import { createTestDatabase, TestDatabase } from './support/database';

const MIGRATIONS_DIR = join(__dirname, '..', 'prisma', 'migrations');

/**
 * Each post's answer is stored when its row is written (post.answer, by the trigger post_keep_answer), and the read
 * path sends it as it is. These pin that the stored text is, on every shape of row and after every kind of write
 * (insert, update, a deletion, a post rewritten after its account was mirrored, an account moved to another profile), exactly what the
 * answer built from the row's columns at read time is; and that the function the trigger calls is this version's
 * expression (otherwise a new migration must replace it: the failure prints the statement).
 */
describe('post.answer: the answer a read sends, stored by the write', () => {
  let db: TestDatabase;
  let pool: Pool;
  let kysely: Kysely<DB>;

  beforeAll(async () => {
    db = await createTestDatabase('post_answer');
    pool = db.pool(2);
    await new Migrator(pool, MIGRATIONS_DIR).migrate();
    kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  });

  afterAll(async () => {
    await kysely?.destroy();
    await db?.drop();
  });

  /** Per post, its stored answer and the answer built now from its columns. */
  const answers = async () => {
    const { rows } = await sql<{ id: string; stored: string | null; built: string }>`
      SELECT post.id, post.answer AS stored, ${postAnswerExpression(kysely)} AS built FROM post ORDER BY post.workspace_id, post.id`.execute(kysely);
    return rows;
  };
  const expectStoredAsBuilt = async () => {
    const rows = await answers();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect({ id: row.id, answer: row.stored }).toEqual({ id: row.id, answer: row.built });
    return rows;
  };
  const profileIdsOf = async (id: string) => {
    const row = (await answers()).find((r) => r.id === id)!;
    return (JSON.parse(row.stored!) as { profileIds: string[] }).profileIds;
  };

  const insertAccount = (workspace: string, id: string, profile: string) =>
    sql`INSERT INTO account (workspace_id, id, profile_id, platform, is_active, needs_reconnection, synced_at, read_started_at, read_id)
        VALUES (${workspace}, ${id}, ${profile}, 'instagram', true, false, now(), now(), gen_random_uuid())`.execute(kysely);
  const insertPost = (workspace: string, id: string, accounts: string[], extra: unknown, fields: { title?: string | null; deleted?: boolean } = {}) =>
    sql`INSERT INTO post (workspace_id, id, status, title, content, scheduled_for, platforms, tags, hashtags, extra, account_ids, platform_names,
                          pozy_created_at, pozy_updated_at, synced_at, read_started_at, read_id, deleted_at, sequence)
        VALUES (${workspace}, ${id}, 'scheduled', ${fields.title === undefined ? 'A "quoted" title é' : fields.title}, 'Spring sale\ncontent',
                '2026-12-24T09:00:00.123Z', ${JSON.stringify(accounts.map((accountId) => ({ platform: 'instagram', accountId })))}::jsonb,
                '{sale,spring}', '{}', ${extra === null ? null : JSON.stringify(extra)}::jsonb, ${accounts}::text[], '{instagram}',
                '2026-12-01T00:00:00Z', '2026-12-02T00:00:00.5Z', now(), now(), gen_random_uuid(),
                ${fields.deleted ? sql`now()` : sql`NULL`}, 1)`.execute(kysely);

  it('is the function of this version of the code (a change of the answer needs a migration replacing post_answer)', async () => {
    const { rows } = await sql<{ body: string }>`SELECT prosrc AS body FROM pg_proc WHERE proname = 'post_answer'`.execute(kysely);
    const installed = rows[0]?.body;
    if (installed !== postAnswerFunctionBody(kysely)) {
      throw new Error(`post_answer differs from src/mirror/posts/post-answer.ts; a new migration needs:\n${postAnswerFunctionSql(kysely)}`);
    }
  });

  it('equals the answer built from the columns, on every shape of row', async () => {
    await insertAccount('ws-a', 'acc-1', 'profile-b');
    await insertAccount('ws-a', 'acc-2', 'profile-a');
    await insertAccount('ws-b', 'acc-1', 'profile-other-workspace');
    await insertPost('ws-a', 'p-plain', ['acc-1', 'acc-2'], {
      userId: 'u1',
      mediaItems: [{ url: 'https://x/1.jpg' }],
      metadata: { b: 1, a: [1.5, null] },
    });
    await insertPost('ws-a', 'p-unknown', ['acc-1'], { zNew: { nested: true }, title: 42, sequence: 'from pozy' }, { title: null });
    await insertPost('ws-a', 'p-no-extra', [], null);
    await insertPost('ws-a', 'p-unmirrored', ['acc-unknown'], {});
    await insertPost('ws-a', 'p-deleted', ['acc-2'], {}, { deleted: true });
    await insertPost('ws-b', 'p-plain', ['acc-1'], { userId: 'u2' });

    const rows = await expectStoredAsBuilt();
    const plain = JSON.parse(rows.find((r) => r.id === 'p-plain')!.stored!) as Record<string, unknown>;
    expect(plain).toMatchObject({
      id: 'p-plain',
      title: 'A "quoted" title é',
      scheduledFor: '2026-12-24T09:00:00.123Z',
      profileIds: ['profile-a', 'profile-b'],
    });
    expect(await profileIdsOf('p-unmirrored')).toEqual([]);
  });

  it('follows every write: an update, a deletion, a post rewritten after its account was mirrored, an account moved', async () => {
    await sql`UPDATE post SET title = 'Renamed', sequence = sequence + 1, synced_at = now() WHERE workspace_id = 'ws-a' AND id = 'p-plain'`.execute(
      kysely,
    );
    await sql`UPDATE post SET deleted_at = now() WHERE id = 'p-no-extra'`.execute(kysely);
    await expectStoredAsBuilt();

    // The post's account is mirrored after the post: refreshProfiles rewrites the post (its sequence raised, as here),
    // and the rewrite answers the account's profile (the whole path: test/change-feed.e2e-spec.ts, history.e2e-spec.ts).
    await insertAccount('ws-a', 'acc-unknown', 'profile-late');
    await sql`UPDATE post SET sequence = sequence + 1 WHERE workspace_id = 'ws-a' AND id = 'p-unmirrored'`.execute(kysely);
    expect(await profileIdsOf('p-unmirrored')).toEqual(['profile-late']);

    // An account moved to another profile: every post of it answers the new profile, in that workspace only.
    await sql`UPDATE account SET profile_id = 'profile-moved' WHERE workspace_id = 'ws-a' AND id = 'acc-1'`.execute(kysely);
    await expectStoredAsBuilt();
    expect(await profileIdsOf('p-unknown')).toEqual(['profile-moved']);
    const { rows } = await sql<{ answer: string }>`SELECT answer FROM post WHERE workspace_id = 'ws-b' AND id = 'p-plain'`.execute(kysely);
    expect((JSON.parse(rows[0].answer) as { profileIds: string[] }).profileIds).toEqual(['profile-other-workspace']);
  });

  it('keeps the words of title and content that q searches', async () => {
    const { rows } = await sql<{ id: string }>`
      SELECT id FROM post WHERE search @@ websearch_to_tsquery('simple', 'renamed spring') ORDER BY workspace_id, id`.execute(kysely);
    expect(rows.map((r) => r.id)).toEqual(['p-plain']);
    const { rows: same } = await sql<{ same: boolean }>`
      SELECT bool_and(search = to_tsvector('simple', coalesce(title, '') || ' ' || coalesce(content, ''))) AS same FROM post`.execute(kysely);
    expect(same[0].same).toBe(true);
  });
});
