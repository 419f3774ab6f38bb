import { Injectable } from '@nestjs/common';

/**
 * In-process wake-ups around the change feed:
 * - `recorded`: a mirror write of this process committed feed entries, so the sequencer places them now rather than
 *   at its next idle pass.
 * - `sequenced`: new positions are readable (placed by this process's sequencer, or announced by another replica's
 *   through PostgreSQL NOTIFY), up to the newest position it names, so the feed's tail readers look again.
 */
@Injectable()
export class ChangeSignal {
  private readonly recordedListeners = new Set<() => void>();
  private readonly sequencedListeners = new Set<(newest: string | undefined) => void>();

  onRecorded(listener: () => void): () => void {
    this.recordedListeners.add(listener);
    return () => this.recordedListeners.delete(listener);
  }

  recorded(count: number): void {
    if (count > 0) for (const listener of this.recordedListeners) listener();
  }

  onSequenced(listener: (newest: string | undefined) => void): () => void {
    this.sequencedListeners.add(listener);
    return () => this.sequencedListeners.delete(listener);
  }

  /** `newest`: the newest position placed, when the announcement says (undefined: positions may have been placed). */
  sequenced(newest?: string): void {
    for (const listener of this.sequencedListeners) listener(newest);
  }
}
