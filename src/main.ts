import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from './app.factory';
import { AppConfig } from './config/app-config';
import { ConfigError } from './config/environment';
import { EmbeddedDatabase } from './database/embedded-postgres';
import { waitForSchema } from './database/schema-gate';
import { Draining } from './health/draining';
import { ProcessFaults } from './metrics/process-faults';

const logger = new Logger('Main');

async function main(): Promise<void> {
  let config: AppConfig;
  try {
    config = AppConfig.fromEnvironment(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      logger.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  Logger.overrideLogger(config.logLevels);

  let embedded: EmbeddedDatabase | undefined;
  let app: NestFastifyApplication | undefined;
  let stopping = false;

  // Installed before start-up: a signal while the database starts or migrations run must still stop what started.
  const startup = (async () => {
    if (!config.databaseUrl) {
      logger.warn('DATABASE_URL is not set: using an embedded PostgreSQL under .data/postgres');
      embedded = await EmbeddedDatabase.start({
        dataDir: '.data/postgres',
        port: config.embeddedDatabasePort,
        database: 'pozy_sync',
        logicalWal: config.logicalPublication !== null,
      });
      config = config.withDatabaseUrl(embedded.url);
    }
    // A fleet migrates as a step of its own: start nothing until the schema is this release's (or newer).
    if (!config.migrateOnStart) await waitForSchema(config, () => stopping);
    if (stopping) return;
    app = await createApp(config);
    if (stopping) return;
    await app.listen({ port: config.port, host: config.host });
    logger.log(
      config.servesHttp
        ? `pozy-sync listening on http://${config.host}:${config.port} (ROLE=${config.role})`
        : `pozy-sync running jobs (ROLE=worker); http://${config.host}:${config.port} serves /health and /metrics only`,
    );
  })();

  /** Closes the service (HTTP, then jobs, then the pool), then the embedded database, and exits. */
  const stop = async (code: number): Promise<never> => {
    try {
      await app?.close();
    } catch (error) {
      logger.error(`Shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
      code = 1;
    } finally {
      await embedded?.stop().catch((error: unknown) => logger.error(`Embedded PostgreSQL did not stop: ${String(error)}`));
    }
    process.exit(code);
  };

  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal} received: shutting down`);
    // Past the drain and grace periods plus a margin, give up rather than hang an orchestrator's restart.
    setTimeout(
      () => {
        logger.error('Shutdown took too long; exiting');
        process.exit(1);
      },
      config.shutdownDrainMs + config.shutdownGraceMs + 5_000,
    ).unref();
    await startup.catch(() => undefined);
    if (app && config.servesHttp && config.shutdownDrainMs > 0) {
      // Readiness fails first; requests still arriving meanwhile are answered as usual.
      app.get(Draining).begin();
      logger.log(`Draining for ${config.shutdownDrainMs} ms (readiness now fails)`);
      await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
    }
    await stop(0);
  };
  // A rejection nobody handled is logged and counted, not the end of the process (metrics/process-faults.ts).
  process.on('unhandledRejection', (reason) => {
    if (app) app.get(ProcessFaults).unhandledRejection(reason);
    else logger.error(`Unhandled promise rejection during start-up: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
  });
  // SIGHUP too: a closed terminal would otherwise end the process without stopping its embedded PostgreSQL.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal));

  try {
    await startup;
  } catch (error) {
    if (stopping) return;
    stopping = true;
    logger.error(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
    await stop(1);
  }
}

void main();
