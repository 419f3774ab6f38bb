/**
 * npm run simulator: a Pozy simulator on loopback with a small seeded world.
 *
 *   SIMULATOR_PORT (4010), SIMULATOR_HOST (127.0.0.1; 0.0.0.0 in a container), SIMULATOR_API_KEY (sk_sim_local), SIMULATOR_WEBHOOK_URL (unset: no deliveries),
 *   SIMULATOR_WEBHOOK_SECRET, SIMULATOR_SEED (1), SIMULATOR_TIME_SCALE (1),
 *   SIMULATOR_ACTIVITY_MS (0: a still world; > 0: one random mutation every that many ms)
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
  const apiKey = process.env.SIMULATOR_API_KEY || 'sk_sim_local';
  const url = process.env.SIMULATOR_WEBHOOK_URL || undefined;
  const secret = process.env.SIMULATOR_WEBHOOK_SECRET || undefined;

  const host = process.env.SIMULATOR_HOST || '127.0.0.1';
  const simulator = await PozySimulator.start({ port, host, apiKey, seed, timeScale, webhook: url ? { url, secret } : undefined });
  simulator.world.seedWorld({ profiles: 2, accountsPerProfile: 3, posts: 12 });
  const activity = activityMs > 0 ? setInterval(() => simulator.world.randomStep(), activityMs) : undefined;

  console.log(`Pozy simulator on ${simulator.url} (seed ${seed})`);
  console.log(`  API key     ${apiKey}`);
  console.log(`  webhook id  ${simulator.webhookId}`);
  console.log(`  webhooks to ${url ?? '(none: set SIMULATOR_WEBHOOK_URL)'}${url && !secret ? ' (unsigned)' : ''}`);
  console.log(`  profiles    ${simulator.world.listProfiles().map((p) => p._id).join(', ')}`);
  if (activity) console.log(`  one random change every ${activityMs} ms`);

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
