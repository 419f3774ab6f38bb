import { Injectable } from '@nestjs/common';

/**
 * In-process wake-ups around the change feed:
 * - `recorded`: a mirror write of this process committed feed entries, so the sequencer places them now rather than
 *   at its next idle pass.
 * - `sequenced`: new positions are readable (placed by this process's sequencer, or announced by another replica's
 *   through PostgreSQL NOTIFY), so long-polling readers look again.
 */
@Injectable()
export class ChangeSignal {
  private readonly recordedListeners = new Set<() => void>();
  private readonly sequencedListeners = new Set<() => void>();

  onRecorded(listener: () => void): () => void {
    this.recordedListeners.add(listener);
    return () => this.recordedListeners.delete(listener);
  }

  recorded(count: number): void {
    if (count > 0) for (const listener of this.recordedListeners) listener();
  }

  onSequenced(listener: () => void): () => void {
    this.sequencedListeners.add(listener);
    return () => this.sequencedListeners.delete(listener);
  }

  sequenced(): void {
    for (const listener of this.sequencedListeners) listener();
  }

  /** Resolves at the next `sequenced`, or after `ms`: true when woken. */
  nextSequenced(ms: number): { woken: Promise<boolean>; cancel: () => void } {
    let timer: NodeJS.Timeout | undefined;
    let unsubscribe: () => void = () => undefined;
    const woken = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => {
        unsubscribe();
        resolve(false);
      }, ms);
      unsubscribe = this.onSequenced(() => {
        clearTimeout(timer);
        unsubscribe();
        resolve(true);
      });
    });
    return {
      woken,
      cancel: () => {
        clearTimeout(timer);
        unsubscribe();
      },
    };
  }
}
