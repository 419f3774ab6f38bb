import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { DatabaseService } from '../database/database.service';
import { WorkerService } from '../queue/worker.service';

@Controller('health')
export class HealthController {
  constructor(
    private readonly database: DatabaseService,
    private readonly worker: WorkerService,
    private readonly config: AppConfig,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('live')
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Ready for traffic: the database answers and, unless ROLE=api, the job worker runs. */
  @Get('ready')
  async ready(): Promise<{ status: 'ok'; database: 'up'; worker: 'running' | 'disabled' }> {
    const database = await this.database.pool.query('SELECT 1').then(
      () => true,
      () => false,
    );
    const worker = !this.config.runsWorker ? 'disabled' : this.worker.running ? 'running' : 'stopped';
    if (!database || worker === 'stopped') {
      throw new ServiceUnavailableException(`Not ready: database ${database ? 'up' : 'down'}, worker ${worker}`);
    }
    return { status: 'ok', database: 'up', worker };
  }
}
