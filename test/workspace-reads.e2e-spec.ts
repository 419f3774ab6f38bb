import type { Pool } from 'pg';
import { getJson } from './support/http';
import { RunningService, waitFor } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';

const ADMIN_TOKEN = 'admin_workspace_reads_e2e_41c9';
const ALL_TOKEN = 'static_workspace_reads_e2e_8b2d';

type Json = Record<string, unknown>;

/** Ids shaped as Pozy's; `SHARED` is held by two workspaces, as two workspaces of one Pozy key hold the same posts. */
const SHARED = '66aa01f3c2b1e4d5f6a70001';
const POSTS: Record<string, string[]> = {
  default: ['66aa01f3c2b1e4d5f6a70000', '66aa01f3c2b1e4d5f6a70002'],
  acme: [SHARED, '66aa01f3c2b1e4d5f6a70003', '66aa01f3c2b1e4d5f6a70005'],
  beta: [SHARED, '66aa01f3c2b1e4d5f6a70004'],
};

/**
 * Rows of three workspaces, as each one's import would have written them. The registry that adds workspaces other than
 * the environment's comes later; what is tested here is that every read keeps to the workspaces its reader may read.
 */
async function fill(pool: Pool): Promise<void> {
  for (const [workspace, ids] of Object.entries(POSTS)) {
    const account = `acc_${workspace}`;
    await pool.query(
      `INSERT INTO account (workspace_id, id, profile_id, platform, username, is_active, needs_reconnection, synced_at, read_started_at, read_id, sequence)
       VALUES ($1, $2, 'prof_' || $1, 'linkedin', $1, true, false, now(), now(), gen_random_uuid(), 1)`,
      [workspace, account],
    );
    await pool.query(
      `INSERT INTO post (workspace_id, id, status, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                         synced_at, read_started_at, read_id, sequence)
       SELECT $1, id, 'published', 'coffee from ' || $1, jsonb_build_array(jsonb_build_object('platform', 'linkedin', 'accountId', $3::text)),
              ARRAY[$3::text], ARRAY['linkedin'], now() - interval '1 day', now() - interval '1 hour', now(), now(), gen_random_uuid(), 1
         FROM unnest($2::text[]) id`,
      [workspace, ids, account],
    );
    await pool.query(
      `INSERT INTO change (workspace_id, type, resource_id, sequence, profile_ids, platforms, data)
       SELECT $1, 'post.changed', id, 1, ARRAY['prof_' || $1], ARRAY['linkedin'], jsonb_build_object('id', id, 'workspaceId', $1::text)
         FROM unnest($2::text[]) id`,
      [workspace, ids],
    );
  }
}

describe('reads keep to the workspaces their reader may read', () => {
  let spec: ServiceSpec;
  let service: RunningService;
  let acmeToken: string;

  const get = (path: string, token = ALL_TOKEN) => getJson<Json>(service, path, { token });
  const keys = (body: Json) => (body.data as Array<{ workspaceId: string; id: string }>).map((row) => `${row.workspaceId}/${row.id}`);

  beforeAll(async () => {
    spec = await startSpec('workspace_reads', { env: { ROLE: 'all', ADMIN_TOKEN, API_TOKENS: ALL_TOKEN } });
    service = spec.service;
    await fill(service.pool);
    // The feed's positions are the sequencer's: wait until it has placed every entry.
    await waitFor(
      'the sequencer to place every entry',
      async () => {
        const { rows } = await service.pool.query<{ n: string }>('SELECT count(*) AS n FROM change WHERE position IS NULL');
        return rows[0].n === '0' ? true : undefined;
      },
      20_000,
    );
    const made = await fetch(`${service.baseUrl}/admin/tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'acme reader', workspaces: ['acme'] }),
    });
    expect(made.status).toBe(201);
    acmeToken = ((await made.json()) as { token: string }).token;
    // Honoured within seconds (the token registry refreshes on its own).
    await waitFor('the new token to be honoured', async () => ((await get('/posts', acmeToken)).status === 200 ? true : undefined), 10_000);
  }, 60_000);

  afterAll(async () => {
    await spec?.close();
  });

  it('lists every workspace’s posts for a reader of all, each once, walking across an id two workspaces share', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await get(`/posts?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...keys(page.body));
      cursor = (page.body.nextCursor as string | null) ?? undefined;
    } while (cursor);
    const all = Object.entries(POSTS).flatMap(([workspace, ids]) => ids.map((id) => `${workspace}/${id}`));
    expect([...seen].sort()).toEqual([...all].sort());
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('answers only the asked workspaces with ?workspace=, one or a list', async () => {
    expect(keys((await get('/posts?workspace=beta')).body).sort()).toEqual(POSTS.beta.map((id) => `beta/${id}`).sort());
    const two = keys((await get('/posts?workspace=default,beta')).body);
    expect(two.sort()).toEqual([...POSTS.default.map((id) => `default/${id}`), ...POSTS.beta.map((id) => `beta/${id}`)].sort());
  });

  it('gives a token of acme acme’s posts, accounts, changes and search matches only', async () => {
    expect(keys((await get('/posts', acmeToken)).body).sort()).toEqual(POSTS.acme.map((id) => `acme/${id}`).sort());
    expect(keys((await get('/posts?q=coffee', acmeToken)).body).sort()).toEqual(POSTS.acme.map((id) => `acme/${id}`).sort());
    expect(keys((await get('/posts?sort=pozyUpdatedAt:desc', acmeToken)).body).sort()).toEqual(POSTS.acme.map((id) => `acme/${id}`).sort());
    expect(keys((await get('/accounts', acmeToken)).body)).toEqual(['acme/acc_acme']);
    const feed = await get('/changes?after=0', acmeToken);
    expect(feed.status).toBe(200);
    expect((feed.body.data as Array<{ workspaceId: string; id: string }>).map((c) => `${c.workspaceId}/${c.id}`).sort()).toEqual(
      POSTS.acme.map((id) => `acme/${id}`).sort(),
    );
  });

  it('answers 404, never 403, for another workspace’s post or account, and an empty page for another workspace asked by name', async () => {
    const other = await get(`/posts/${POSTS.default[0]}`, acmeToken);
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ error: 'not_found' });
    expect((await get('/accounts/acc_beta', acmeToken)).status).toBe(404);
    const asked = await get('/posts?workspace=beta', acmeToken);
    expect(asked).toEqual({ status: 200, body: { data: [], nextCursor: null } });
    expect((await get(`/posts/${POSTS.beta[1]}?workspace=beta`, acmeToken)).status).toBe(404);
    expect((await get('/changes?after=0&workspace=beta', acmeToken)).body.data).toEqual([]);
  });

  it('answers the shared id in its own workspace to a reader of one, and 409 naming both to a reader of both', async () => {
    expect((await get(`/posts/${SHARED}`, acmeToken)).body).toMatchObject({ id: SHARED, workspaceId: 'acme', profileIds: ['prof_acme'] });
    const both = await get(`/posts/${SHARED}`);
    expect(both.status).toBe(409);
    expect(both.body).toMatchObject({ error: 'ambiguous_id', message: expect.stringMatching(/acme, beta/) });
    expect((await get(`/posts/${SHARED}?workspace=beta`)).body).toMatchObject({ id: SHARED, workspaceId: 'beta', profileIds: ['prof_beta'] });
  });

  it.each([
    ['an id that is no slug', '/posts?workspace=Not_A_Slug'],
    ['an empty id', '/posts?workspace=acme,'],
    ['more than 100 ids', `/posts?workspace=${Array.from({ length: 101 }, (_, i) => `w${i}`).join(',')}`],
    ['an id that is no slug, on the feed', '/changes?workspace=ACME'],
    ['an id that is no slug, for one account', '/accounts/acc_acme?workspace=%20'],
  ])('refuses %s with a 400 naming workspace', async (_what, path) => {
    const answer = await get(path);
    expect(answer.status).toBe(400);
    expect(JSON.stringify(answer.body)).toMatch(/workspace/);
  });

  it('refuses a cursor edited to name a workspace that is no slug', async () => {
    const cursor = Buffer.from(JSON.stringify({ after: SHARED, workspace: 'NOT A SLUG' })).toString('base64url');
    const answer = await get(`/posts?cursor=${cursor}`);
    expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_query' } });
  });
});
