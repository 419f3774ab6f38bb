import { Injectable } from '@nestjs/common';

/**
 * Tells this process's reconcile dispatcher that requests were just committed and fall due at `dueAt`, so it hands
 * them to the worker then rather than at its next poll. Raised by whatever writes a due request (the receive
 * statement, the spool's retries, an operator's resync, a lifted budget pause); other replicas' dispatchers find
 * them by polling. It lives below reconcile/ so that the writers need not import the dispatcher.
 */
@Injectable()
export class ReconcileSignal {
  private readonly listeners = new Set<(dueAt: Date) => void>();

  subscribe(listener: (dueAt: Date) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  requested(dueAt: Date): void {
    for (const listener of this.listeners) listener(dueAt);
  }
}
