import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheck, HealthCheckResult, HealthCheckService, HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse } from '../common/error-body.dto';
import { AppConfig } from '../config/app-config';
import { PrimaryWatch } from '../database/primary-watch';
import { WorkerService } from '../queue/worker.service';
import { Draining } from './draining';
import { HealthCheckResponse } from './dto/health.response';
import { ReadinessRepository } from './readiness.repository';

/** A readiness probe must answer well within an orchestrator's probe timeout (often 1 s), whatever the database does. */
const DATABASE_CHECK_TIMEOUT_MS = 800;

@ApiTags('Health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly database: ReadinessRepository,
    private readonly worker: WorkerService,
    private readonly draining: Draining,
    private readonly primary: PrimaryWatch,
    private readonly config: AppConfig,
  ) {}

  /** The process is up and serving HTTP: nothing else is checked, so a slow database never gets it restarted. */
  @Get('live')
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({ summary: 'Liveness: the process is up and serving HTTP.' })
  @ApiOkResponse({ type: HealthCheckResponse })
  live(): Promise<HealthCheckResult> {
    return this.health.check([() => this.indicators.check('process').up({ pid: process.pid })]);
  }

  /** Ready for traffic: not shutting down, the database answers with every migration applied, and the worker runs. */
  @Get('ready')
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({ summary: 'Readiness: not draining, the database answers, migrations are applied, and (unless ROLE=api) the worker runs.' })
  @ApiOkResponse({ type: HealthCheckResponse })
  @ApiErrorResponse({ not_ready: '`details` has each check (`draining`, `database`, `migrations`, `worker`) with its status' })
  async ready(): Promise<HealthCheckResult> {
    try {
      return await this.health.check([
        () => (this.draining.active ? this.indicators.check('draining').down('shutting down') : this.indicators.check('draining').up()),
        async () => {
          const database = this.indicators.check('database');
          // A server that answers but refuses writes (a standby, a demoted primary behind a stale endpoint) is no primary.
          if (!this.primary.writable) {
            const { state, reason, since } = this.primary.figures();
            return database.down({ reason: `database_${state}`, message: reason, since: since.toISOString() });
          }
          const started = Date.now();
          const answered = await this.database.answers(DATABASE_CHECK_TIMEOUT_MS);
          if (!answered) this.primary.wake();
          return answered
            ? database.up({ responseTimeMs: Date.now() - started })
            : database.down({ reason: 'database_unreachable', message: 'no answer to SELECT 1' });
        },
        async () => {
          const migrations = this.indicators.check('migrations');
          // Unknown while no writable primary answers: the database check already says why, and this is not a 500.
          const pending = await this.database.pendingMigrations().catch(() => undefined);
          if (pending === undefined) return migrations.down({ reason: 'unknown: the database did not answer' });
          return pending.length === 0 ? migrations.up() : migrations.down({ pending });
        },
        () => {
          const worker = this.indicators.check('worker');
          if (!this.config.runsWorker) return worker.up({ role: this.config.role, running: false });
          return this.worker.running ? worker.up({ role: this.config.role, running: true }) : worker.down({ running: false });
        },
        ...this.publicationCheck(),
      ]);
    } catch (error) {
      // Terminus answers 503 with its own body; ours carries the same checks in `details`, like every other error.
      if (!(error instanceof ServiceUnavailableException)) throw error;
      const result = error.getResponse() as HealthCheckResult;
      const failing = Object.keys(result.error ?? {});
      const reason = (result.error?.database as { reason?: string } | undefined)?.reason;
      throw new ApiError('not_ready', `Not ready: ${failing.join(', ') || 'a check failed'}${reason ? ` (${reason})` : ''}`, result.details);
    }
  }

  /**
   * With LOGICAL_PUBLICATION set: how the publication stood after the boot (`state` ready, wal_level or failed, and
   * the problem). Always up: the mirror serves without it, so it never takes a replica out of traffic.
   */
  private publicationCheck(): (() => HealthIndicatorResult)[] {
    const publication = this.database.logicalPublication();
    if (!publication) return [];
    return [() => this.indicators.check('logicalPublication').up({ ...publication })];
  }
}
