/**
 * The Pozy API for the receive scenario's pozy-sync: a Pozy simulator in its own process (so it takes no CPU from
 * the load generator), with an empty world, no latency and a rate limit high enough never to throttle. Every post
 * the scenario's events name is unknown to it, so each reconcile read is one `GET /v1/posts/{id}` answered 404.
 * Run by the bench with PORT, POZY_API_KEY and POZY_RATE_LIMIT_PER_MINUTE.
 */
import { PozySimulator } from '../simulator/simulator';

async function main(): Promise<void> {
  // A stand-alone script run only by the bench, so it reads its settings directly.
  const simulator = await PozySimulator.start({
    port: Number(process.env.PORT),
    apiKey: process.env.POZY_API_KEY ?? '',
    rateLimitPerMinute: Number(process.env.POZY_RATE_LIMIT_PER_MINUTE),
  });
  const stop = () => void simulator.stop().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main();
