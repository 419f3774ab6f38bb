import { Injectable } from '@nestjs/common';

/**
 * Tells this process's delivery worker that notifications were just committed, so it sends them now rather than at
 * its next poll. Other replicas' workers find them by polling.
 */
@Injectable()
export class NotificationSignal {
  private readonly listeners = new Set<() => void>();

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  queued(count: number): void {
    if (count > 0) for (const listener of this.listeners) listener();
  }
}
