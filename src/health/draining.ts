import { Injectable } from '@nestjs/common';

/**
 * Set when shutdown begins (main.ts, on SIGTERM): readiness fails from then on, so load balancers stop sending
 * traffic during SHUTDOWN_DRAIN_MS, while requests already routed here are still answered.
 */
@Injectable()
export class Draining {
  private since: Date | null = null;

  begin(): void {
    this.since ??= new Date();
  }

  get active(): boolean {
    return this.since !== null;
  }
}
