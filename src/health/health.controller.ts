import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { WorkerService } from '../queue/worker.service';

@Controller('health')
export class HealthController {
  constructor(
    private readonly database: DatabaseService,
    private readonly worker: WorkerService,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('live')
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Ready for traffic: the database answers and the job worker runs. */
  @Get('ready')
  async ready(): Promise<{ status: 'ok'; database: 'up'; worker: 'running' }> {
    const database = await this.database.pool.query('SELECT 1').then(
      () => true,
      () => false,
    );
    if (!database || !this.worker.running) {
      throw new ServiceUnavailableException(
        `Not ready: database ${database ? 'up' : 'down'}, worker ${this.worker.running ? 'running' : 'stopped'}`,
      );
    }
    return { status: 'ok', database: 'up', worker: 'running' };
  }
}
