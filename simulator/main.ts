/**
 * npm run simulator: a Pozy simulator on loopback, with a small seeded world or a large workspace that already existed.
 *
 *   SIMULATOR_PORT (4010), SIMULATOR_HOST (127.0.0.1; 0.0.0.0 in a container), SIMULATOR_API_KEY (sk_sim_local), SIMULATOR_WEBHOOK_URL (unset: no deliveries),
 *   SIMULATOR_WEBHOOK_SECRET, SIMULATOR_SEED (1), SIMULATOR_TIME_SCALE (1),
 *   SIMULATOR_ACTIVITY_MS (0: a still world; > 0: one random mutation every that many ms),
 *   SIMULATOR_EXISTING_POSTS, SIMULATOR_EXISTING_ACCOUNTS (both unset: the small world, made with events; either set:
 *     a workspace that existed before pozy-sync, with that many posts (0) and accounts (6; at least 1 with posts),
 *     made without events, e.g. 100000 and 2000),
 *   SIMULATOR_RATE_LIMIT_PER_MINUTE (600: Pozy's for 3–2,000 accounts, all clients of the API key together),
 *   SIMULATOR_OTHER_CLIENT_PER_MINUTE (0: another client of the same key, the team's own product, spending that many
 *     requests a minute of the same budget),
 *   SIMULATOR_UNKNOWN_FIELDS (false; true: every post, target and account the API serves also carries a field
 *     pozy-sync has never seen: pozyLabsInsights, pozyLabsReach, pozyLabsVerified),
 *   SIMULATOR_CLOCK_OFFSET_MS (0: Pozy's clock lags this host's by that many ms, negative: runs ahead; its event
 *     timestamps, updatedAt and Date headers all come from it),
 *   SIMULATOR_API_READ_LAG_MS (0: for that long after a post or account changed, the API answers as a lagging read
 *     replica would: 404 for the post, the account left out of lists),
 *   SIMULATOR_API_429_RATE (0: the share of API requests answered 429 whatever the window says, 0 to 1),
 *   SIMULATOR_API_429_RETRY_AFTER (1: those 429s' Retry-After, sent as written, e.g. 86400 or 1e300; empty: none),
 *   SIMULATOR_EXTRA_API_KEYS (unset: one workspace; a comma-separated list of keys: a workspace more for each),
 *   SIMULATOR_WORKSPACES (0: that many workspaces more, keyed <SIMULATOR_WORKSPACE_KEY_PREFIX>-1 to -N),
 *   SIMULATOR_WORKSPACE_KEY_PREFIX (sk_sim_ws).
 *   Every extra workspace is made as the first (its world, rate limit, faults, activity) but from its own seed, and
 *   has no subscription until one is made through POST /v1/webhooks/settings.
 */
/* eslint-disable no-console -- a command-line tool's output */
import { PozySimulator } from './simulator';

function numberFromEnv(name: string, fallback: number, valid: (n: number) => boolean): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || !valid(value)) {
    console.error(`${name}=${raw} is not valid`);
    process.exit(1);
  }
  return value;
}

async function main(): Promise<void> {
  const port = numberFromEnv('SIMULATOR_PORT', 4010, (n) => Number.isInteger(n) && n >= 0 && n < 65536);
  const seed = numberFromEnv('SIMULATOR_SEED', 1, Number.isInteger);
  const timeScale = numberFromEnv('SIMULATOR_TIME_SCALE', 1, (n) => n > 0);
  const activityMs = numberFromEnv('SIMULATOR_ACTIVITY_MS', 0, (n) => n >= 0);
  const existing = ['SIMULATOR_EXISTING_POSTS', 'SIMULATOR_EXISTING_ACCOUNTS'].some((name) => (process.env[name] ?? '') !== '');
  const existingPosts = numberFromEnv('SIMULATOR_EXISTING_POSTS', 0, (n) => Number.isSafeInteger(n) && n >= 0);
  const existingAccounts = numberFromEnv(
    'SIMULATOR_EXISTING_ACCOUNTS',
    6,
    (n) => Number.isSafeInteger(n) && (n >= 1 || (n === 0 && existingPosts === 0)),
  );
  const rateLimitPerMinute = numberFromEnv('SIMULATOR_RATE_LIMIT_PER_MINUTE', 600, (n) => Number.isSafeInteger(n) && n >= 1);
  const otherClientPerMinute = numberFromEnv('SIMULATOR_OTHER_CLIENT_PER_MINUTE', 0, (n) => Number.isSafeInteger(n) && n >= 0);
  const clockOffsetMs = numberFromEnv('SIMULATOR_CLOCK_OFFSET_MS', 0, Number.isSafeInteger);
  const apiReadLagMs = numberFromEnv('SIMULATOR_API_READ_LAG_MS', 0, (n) => Number.isSafeInteger(n) && n >= 0);
  const api429Rate = numberFromEnv('SIMULATOR_API_429_RATE', 0, (n) => n >= 0 && n <= 1);
  const api429RetryAfter = process.env.SIMULATOR_API_429_RETRY_AFTER ?? '1';
  const unknownFieldsRaw = process.env.SIMULATOR_UNKNOWN_FIELDS ?? '';
  if (!['', 'true', 'false'].includes(unknownFieldsRaw)) {
    console.error(`SIMULATOR_UNKNOWN_FIELDS=${unknownFieldsRaw} is not valid (true or false)`);
    process.exit(1);
  }
  const unknownFields = unknownFieldsRaw === 'true';
  const apiKey = process.env.SIMULATOR_API_KEY || 'sk_sim_local';
  const extraCount = numberFromEnv('SIMULATOR_WORKSPACES', 0, (n) => Number.isSafeInteger(n) && n >= 0 && n <= 10_000);
  const prefix = process.env.SIMULATOR_WORKSPACE_KEY_PREFIX || 'sk_sim_ws';
  const listed = process.env.SIMULATOR_EXTRA_API_KEYS;
  const extraKeys = [
    ...(listed === undefined ? [] : listed.split(',')).map((key) => key.trim()).filter((key) => key !== ''),
    ...Array.from({ length: extraCount }, (_, i) => `${prefix}-${i + 1}`),
  ];
  const duplicate = [apiKey, ...extraKeys].find((key, i, all) => all.indexOf(key) !== i);
  if (duplicate !== undefined) {
    console.error(`The API key ${duplicate} is given twice (SIMULATOR_API_KEY, SIMULATOR_EXTRA_API_KEYS, SIMULATOR_WORKSPACES)`);
    process.exit(1);
  }
  const url = process.env.SIMULATOR_WEBHOOK_URL || undefined;
  const secret = process.env.SIMULATOR_WEBHOOK_SECRET || undefined;

  const host = process.env.SIMULATOR_HOST || '127.0.0.1';
  const faults = { apiReadLagMs, api429Rate, api429RetryAfter };
  const simulator = await PozySimulator.start({
    port,
    host,
    apiKey,
    seed,
    timeScale,
    rateLimitPerMinute,
    otherClientPerMinute,
    clockOffsetMs,
    faults,
    webhook: url ? { url, secret } : undefined,
  });
  const seeding = Date.now();
  for (const key of extraKeys) simulator.addWorkspace({ apiKey: key, rateLimitPerMinute, otherClientPerMinute, faults });
  const workspaces = simulator.workspaces();
  for (const workspace of workspaces) {
    workspace.world.setUnknownFields(unknownFields);
    if (existing) workspace.world.seedExisting({ posts: existingPosts, accounts: existingAccounts });
    else workspace.world.seedWorld({ profiles: 2, accountsPerProfile: 3, posts: 12 });
  }
  const seededMs = Date.now() - seeding;
  const activity = activityMs > 0 ? setInterval(() => workspaces.forEach((workspace) => workspace.world.randomStep()), activityMs) : undefined;

  console.log(`Pozy simulator on ${simulator.url} (seed ${seed})`);
  console.log(`  API key     ${apiKey}`);
  console.log(`  webhook id  ${simulator.webhookId}`);
  console.log(`  webhooks to ${url ?? '(none: set SIMULATOR_WEBHOOK_URL)'}${url && !secret ? ' (unsigned)' : ''}`);
  const profiles = simulator.world.listProfiles();
  console.log(`  profiles    ${profiles.length > 4 ? `${profiles.length}` : profiles.map((p) => p._id).join(', ')}`);
  if (existing) {
    console.log(
      `  existing    ${simulator.world.postCount} posts, ${simulator.world.listAccounts().length} accounts, no events (seeded in ${seededMs} ms)`,
    );
  }
  if (extraKeys.length > 0) {
    const shown = extraKeys.length > 4 ? `${extraKeys[0]} … ${extraKeys[extraKeys.length - 1]}` : extraKeys.join(', ');
    console.log(`  workspaces  ${extraKeys.length} more, made as the first, without subscriptions: ${shown}`);
  }
  console.log(`  rate limit  ${rateLimitPerMinute}/min${otherClientPerMinute > 0 ? `, of which another client spends ${otherClientPerMinute}` : ''}`);
  if (unknownFields) console.log('  unknown fields on: pozyLabsInsights, pozyLabsReach, pozyLabsVerified');
  if (clockOffsetMs !== 0) console.log(`  clock       ${Math.abs(clockOffsetMs)} ms ${clockOffsetMs > 0 ? 'behind' : 'ahead of'} this host's`);
  if (apiReadLagMs > 0) console.log(`  reads lag   writes by ${apiReadLagMs} ms (404s, accounts left out)`);
  if (api429Rate > 0) console.log(`  429s        ${api429Rate * 100} % of requests, Retry-After ${JSON.stringify(api429RetryAfter)}`);
  if (activity) console.log(`  one random change every ${activityMs} ms${extraKeys.length > 0 ? ' in each workspace' : ''}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    clearInterval(activity);
    console.log(`${signal}: stopping`);
    await simulator.stop();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void stop(signal));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
