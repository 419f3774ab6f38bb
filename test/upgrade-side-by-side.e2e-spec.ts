import { readdirSync } from 'node:fs';
import { Client } from 'pg';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PozySimulator } from '../simulator/simulator';
import { MIGRATIONS_DIR } from '../src/database/database.service';
import { readMigrations } from '../src/database/migrator';
import { createTestDatabase, TestDatabase } from './support/database';
import { describeOutcome, FailoverService, settle, startFailoverService, startLoad } from './support/failover-scenario';
import { postsSharingTwoWords, withIndexesDeferred } from './support/bulk-load';
import { buildPreviousRelease, PREVIOUS_RELEASE } from './support/previous-release';
import { BUILT_MIGRATE, spawnService } from './support/process';
import { WebhookLoad } from './support/webhook-load';

/** What readers of one release saw: answers by status class, and the slowest. */
interface ReadFigures {
  answers: number;
  serverErrors: string[];
  slowestMs: number;
}

/**
 * Readers as a team's product reads the mirror, against whichever releases are serving: a page of posts, a post by
 * id from that page, a search. Every answer is counted; a 5xx is kept with what was asked.
 */
class Readers {
  readonly figures = new Map<string, ReadFigures>();
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly targets: () => FailoverService[],
    concurrency: number,
  ) {
    this.loops = Array.from({ length: concurrency }, (_, i) => this.loop(i));
  }

  private async read(service: FailoverService, path: string): Promise<unknown> {
    const figures = this.figures.get(service.baseUrl) ?? { answers: 0, serverErrors: [], slowestMs: 0 };
    this.figures.set(service.baseUrl, figures);
    const began = Date.now();
    const response = await fetch(`${service.baseUrl}${path}`, { signal: AbortSignal.timeout(30_000) });
    const body: unknown = await response.json();
    figures.answers += 1;
    figures.slowestMs = Math.max(figures.slowestMs, Date.now() - began);
    if (response.status >= 500) figures.serverErrors.push(`${response.status} ${path}: ${JSON.stringify(body).slice(0, 200)}`);
    return body;
  }

  private async loop(offset: number): Promise<void> {
    for (let turn = offset; this.running; turn += 1) {
      const targets = this.targets();
      const service = targets[turn % targets.length];
      const page = (await this.read(service, '/posts?limit=20&sort=pozyUpdatedAt:desc')) as { data?: Array<{ id: string }> };
      const post = page.data?.[turn % Math.max(1, page.data.length)];
      if (post) await this.read(service, `/posts/${post.id}`);
      await this.read(service, `/posts?q=${['coffee', 'river walk', 'lemon'][turn % 3]}&limit=10`);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

/**
 * Posts already mirrored when the upgrade starts, inserted with SQL into the previous release's schema. A few
 * thousand in CI; `UPGRADE_TEST_POSTS=1000000` for the measurement docs/operations.md reports.
 */
const MIRRORED_POSTS = Number(process.env.UPGRADE_TEST_POSTS ?? 20_000);

/**
 * An upgrade as a team rolls it, under load: the previous release (PREVIOUS_RELEASE, built from its commit in a git
 * worktree) serves webhooks and reads; this release's migration step runs beside it; this release starts
 * (MIGRATE_ON_START=false) and takes the webhooks; the previous release stops. Nothing answered 5xx, nothing spooled,
 * nothing lost, and the mirror equals Pozy's truth at the end.
 */
describe(`upgrade from release ${PREVIOUS_RELEASE.version}, side by side on one database under load`, () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  let previousMain: string;
  let previousMigrations: string[];
  let previous: FailoverService | undefined;
  let current: FailoverService | undefined;
  let load: WebhookLoad | undefined;
  let readers: Readers | undefined;

  beforeAll(async () => {
    const release = await buildPreviousRelease();
    previousMain = release.main;
    previousMigrations = readdirSync(join(release.directory, 'prisma', 'migrations'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    db = await createTestDatabase('upgrade_side_by_side');
    sim = await PozySimulator.start({ apiKey: 'sk_sim_upgrade', seed: 37, rateLimitPerMinute: 100_000 });
  }, 600_000);

  afterAll(async () => {
    load?.halt();
    await readers?.stop();
    await previous?.stop();
    await current?.stop();
    await sim?.stop();
    await db?.drop();
  }, 60_000);

  it('keeps the previous release serving while this one migrates and starts, then hands over with nothing lost', async () => {
    previous = await startFailoverService(sim, db.url, {}, previousMain);
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, ['post'], async () => {
        await client.query(postsSharingTwoWords(MIRRORED_POSTS));
      });
      await client.query('ANALYZE post');
    } finally {
      await client.end();
    }
    let receiver = previous;
    load = await startLoad(sim, () => receiver.baseUrl, { perSecond: 30, seed: 37 });
    const serving: FailoverService[] = [previous];
    readers = new Readers(() => serving, 3);

    // This release's migration step, beside the previous release at work.
    const expected = readMigrations(MIGRATIONS_DIR)
      .map((m) => m.name)
      .filter((name) => !previousMigrations.includes(name));
    const stepStarted = Date.now();
    const step = spawnService({ DATABASE_URL: db.url, LOG_FORMAT: 'pretty' }, tmpdir(), BUILT_MIGRATE);
    expect(await step.exited).toBe(0);
    const stepMs = Date.now() - stepStarted;
    expect(step.output()).toContain(`Applied ${expected.length} migration(s)`);

    // This release starts on the migrated schema, takes the webhooks and half the reads; the previous one stops.
    current = await startFailoverService(sim, db.url, { MIGRATE_ON_START: 'false' });
    serving.push(current);
    receiver = current;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    serving.shift();
    const stopping = previous;
    previous = undefined;
    stopping.process.child.kill('SIGTERM');
    expect(await stopping.process.exited).toBe(0);

    const outcome = await settle({ sim, load, services: [current], primaryUrl: db.url, writableAt: Date.now() });
    await readers.stop();
    const [before, after] = [stopping.baseUrl, current.baseUrl].map(
      (url) => readers!.figures.get(url) ?? { answers: 0, serverErrors: [], slowestMs: 0 },
    );
    process.stdout.write(
      describeOutcome(
        `upgrade ${PREVIOUS_RELEASE.version} -> this release on ${MIRRORED_POSTS} posts (${expected.length} migration(s): ${expected.join(', ') || 'none'}, step ${stepMs} ms)`,
        outcome,
        `; slowest acknowledgement ${outcome.slowestAckMs} ms; reads: ${before.answers} on ${PREVIOUS_RELEASE.version} (slowest ${before.slowestMs} ms), ${after.answers} on this release (slowest ${after.slowestMs} ms)`,
      ),
    );

    expect(outcome).toMatchObject({ lost: 0, spooled: 0, refused: 0, unanswered: 0 });
    expect(before.serverErrors).toEqual([]);
    expect(after.serverErrors).toEqual([]);
    expect(before.answers).toBeGreaterThan(0);
    expect(after.answers).toBeGreaterThan(0);
    expect(await current.metric('pozy_sync_unhandled_rejections_total', { source: 'pozy-sync' })).toBe(0);
  }, 600_000);
});
