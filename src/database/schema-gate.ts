import { createServer, Server } from 'node:http';
import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import { errorBody, type ErrorBody } from '../common/api-error';
import { ConnectionMonitor } from './connection-monitor';
import { MIGRATIONS_DIR } from './database.service';
import { FailoverPool } from './failover-pool';
import { Migrator } from './migrator';

/** How often a waiting process looks whether the migration step has run. */
const LOOK_EVERY_MS = 2_000;

/**
 * With MIGRATE_ON_START=false, a release must not run on a schema older than it needs: until `npm run migrate` (a
 * Kubernetes Job, a CI step) has applied every migration it ships, the process waits before starting anything, and
 * its port answers `/health/live` 200 and everything else 503 `not_ready`, naming the migration it waits for, so
 * that an orchestrator keeps it out of traffic without restarting it. A schema newer than the release (a rollback)
 * does not hold it: the migrator's report names the migrations it does not know.
 */
export async function waitForSchema(config: AppConfig, stopping: () => boolean): Promise<void> {
  const logger = new Logger('SchemaGate');
  const pool = new FailoverPool({ endpoint: config.databaseEndpoint(), name: 'schema-gate', observer: new ConnectionMonitor(), max: 1 });
  const migrator = new Migrator(pool, MIGRATIONS_DIR);
  let server: Server | undefined;
  let waiting: { pending: string[] } | { error: string } = { pending: [] };
  try {
    for (;;) {
      waiting = await migrator.status().then(
        ({ pending }) => ({ pending }),
        (error: unknown) => ({ error: (error as Error).message }),
      );
      if ('pending' in waiting && waiting.pending.length === 0) return;
      if (stopping()) return;
      if (!server) {
        logger.warn(
          'pending' in waiting
            ? `Waiting for ${waiting.pending.length} migration(s), first ${waiting.pending[0]}: run \`npm run migrate\` (MIGRATE_ON_START=false)`
            : `Waiting for the database to read the schema's migrations: ${waiting.error}`,
        );
        server = await listen(config, () => waiting);
      }
      await new Promise((resolve) => setTimeout(resolve, LOOK_EVERY_MS));
    }
  } finally {
    if (server) {
      server.closeAllConnections();
      await new Promise((resolve) => server!.close(resolve));
    }
    await pool.end();
    if (server) logger.log('Every migration this release ships is applied: starting');
  }
}

function listen(config: AppConfig, state: () => { pending: string[] } | { error: string }): Promise<Server> {
  const server = createServer((request, response) => {
    const send = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (request.url === '/health/live') {
      send(200, {
        status: 'ok',
        info: { process: { status: 'up', pid: process.pid } },
        error: {},
        details: { process: { status: 'up', pid: process.pid } },
      });
      return;
    }
    const now = state();
    const migrations =
      'pending' in now
        ? { status: 'down', reason: 'schema_behind', waitingFor: now.pending[0], pending: now.pending }
        : { status: 'down', reason: `unknown: ${now.error}` };
    const body: ErrorBody = {
      ...errorBody(
        'not_ready',
        `Not ready: migrations (${'pending' in now ? `waiting for ${now.pending[0]}: run npm run migrate` : 'the database did not answer'})`,
      ),
      details: { migrations },
    };
    response.setHeader('retry-after', String(LOOK_EVERY_MS / 1000));
    send(503, body);
  });
  server.keepAliveTimeout = 1_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve(server));
  });
}
