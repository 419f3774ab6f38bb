/**
 * npm run bench: measures the built service against baselines, in one run on one machine and database server.
 *
 *   receive    the receive path against a bare baseline receiver (receive.ts)
 *   reconcile  a burst of events over few posts: Pozy API calls per post and time until the mirror equals the
 *              truth, against a naive fetch-and-UPSERT-per-event receiver (reconcile.ts)
 *   notify     change notifications to a local subscriber: notifications a second and the latency from the mirror
 *              write to the subscriber's receipt, against a naive outbox relay (notify.ts)
 *   import     the first start against a workspace of 100,000 posts within Pozy's default budget: time beside the
 *              bound the budget sets, API calls, peak RSS, and an event's read during it, lanes against one line
 *              (import.ts)
 *   query      GET /posts?limit=50 on a mirror of 500,000 posts, against a bare endpoint running one fixed keyset
 *              statement (query.ts)
 *   feed       a consumer following GET /changes with long polls, against one polling GET /posts?updatedSince= every
 *              second, on a steady load whose reads reach the mirror out of Pozy's updatedAt order: changes a second
 *              delivered, latency from the mirror write to receipt, and changes missed; beside the raw long poll, the
 *              client's followChanges, and a named consumer's backlog read by 4 partitions' workers against 1 (feed.ts)
 *
 *   workspaces 200 workspaces of 500 posts added at once through the admin API: time until all are imported beside
 *              the bound IMPORT_CONCURRENCY sets, and another workspace's event reads meanwhile, busy against quiet
 *              (workspaces.ts)
 *
 *   idle       the built service started on a fresh database with nothing to do: its resident set once settled and
 *              its peak while booting, beside the 150 MB goal (idle.ts)
 *
 *   storage    20,000 varied posts imported, then changed 10 times each through webhooks: bytes on disk per post
 *              (heap, TOAST, indexes of post, change, resource_version, pozy_event and the rest) against the JSON
 *              Pozy sent, after the import, after the changes (growth per change) and after retention (storage.ts)
 *
 *   BENCH_SCENARIOS (comma-separated; default receive,reconcile,notify,import,query,feed,workspaces,idle,storage), BENCH_DATABASE_URL (a server to create the bench
 *   databases on; default: an embedded PostgreSQL); each scenario's own settings are listed in its file.
 */
/* eslint-disable no-console -- a command-line report */
import { Logger } from '@nestjs/common';
import { EmbeddedDatabase } from '../src/database/embedded-postgres';
import { freePort } from './net';
import { runFeedScenario } from './feed';
import { runIdleScenario } from './idle';
import { runImportScenario } from './import';
import { runReceiveScenario } from './receive';
import { runNotifyScenario } from './notify';
import { runQueryScenario } from './query';
import { runReconcileScenario } from './reconcile';
import { runStorageScenario } from './storage';
import { runWorkspacesScenario } from './workspaces';

const SCENARIOS: Record<string, (serverUrl: string) => Promise<void>> = {
  receive: runReceiveScenario,
  reconcile: runReconcileScenario,
  notify: runNotifyScenario,
  import: runImportScenario,
  query: runQueryScenario,
  feed: runFeedScenario,
  workspaces: runWorkspacesScenario,
  idle: runIdleScenario,
  storage: runStorageScenario,
};

function chosenScenarios(): string[] {
  const names = (process.env.BENCH_SCENARIOS ?? 'receive,reconcile,notify,import,query,feed,workspaces,idle,storage')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(name in SCENARIOS));
  if (unknown.length > 0 || names.length === 0) {
    throw new Error(`BENCH_SCENARIOS: unknown ${unknown.join(', ') || '(none given)'}; choose from ${Object.keys(SCENARIOS).join(', ')}`);
  }
  return names;
}

async function main(): Promise<void> {
  const scenarios = chosenScenarios();
  // The embedded PostgreSQL's own log lines would bury the report.
  Logger.overrideLogger(['error', 'warn']);
  let embedded: EmbeddedDatabase | undefined;
  let serverUrl = process.env.BENCH_DATABASE_URL;
  if (!serverUrl) {
    embedded = await EmbeddedDatabase.start({ dataDir: '.data/bench-postgres', port: await freePort(), database: 'postgres' });
    serverUrl = embedded.url;
  }
  try {
    console.log(
      `pozy-sync bench (Node ${process.version}, database ${embedded ? 'embedded PostgreSQL' : 'BENCH_DATABASE_URL'}, scenarios ${scenarios.join(', ')})`,
    );
    for (const [i, name] of scenarios.entries()) {
      if (i > 0) console.log('');
      await SCENARIOS[name](serverUrl);
    }
  } finally {
    await embedded?.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
