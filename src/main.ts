import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from './app.factory';
import { AppConfig } from './config/app-config';
import { ConfigError } from './config/environment';
import { EmbeddedDatabase } from './database/embedded-postgres';

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
  try {
    if (!config.databaseUrl) {
      logger.warn('DATABASE_URL is not set: using an embedded PostgreSQL under .data/postgres');
      embedded = await EmbeddedDatabase.start({
        dataDir: '.data/postgres',
        port: config.embeddedDatabasePort,
        database: 'pozy_sync',
      });
      config = config.withDatabaseUrl(embedded.url);
    }
    app = await createApp(config, { logger: config.logLevels });
    if (config.servesHttp) {
      await app.listen({ port: config.port, host: config.host });
      logger.log(`pozy-sync listening on http://${config.host}:${config.port} (ROLE=${config.role})`);
    } else {
      logger.log('pozy-sync running jobs only (ROLE=worker)');
    }
  } catch (error) {
    logger.error(`Start-up failed: ${error instanceof Error ? error.message : String(error)}`);
    await app?.close().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    process.exit(1);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal} received: shutting down`);
    // Past the grace period plus a margin, give up rather than hang an orchestrator's restart.
    setTimeout(() => {
      logger.error('Shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5_000).unref();
    try {
      await app?.close();
      await embedded?.stop();
      process.exit(0);
    } catch (error) {
      logger.error(`Shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    }
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void shutdown(signal));
}

void main();
