import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { setFlagsFromString } from 'node:v8';
import { AppConfig } from '../config/app-config';

/**
 * Keeps V8's heap close to what it holds while a whole-workspace run streams pages through this process
 * (HEAP_GROWTH_PERCENT): each page allocates megabytes that die at once, and by V8's own rule the heap grew to four
 * times what a full collection kept (a 100,000-post import peaked at about 330 MB, about 210 MB with 50 %). Outside
 * runs V8's rule holds: under a stream of webhooks the tighter heap collected so often that the receive path's p99
 * rose by 60 to 80 %. V8 reads the flag at each full collection, so setting it while the process runs takes effect; the
 * limit a collection set stays until the next one, which is why start-up is kept tight too (by V8's rule a first
 * import began under a limit grown while booting, and peaked 60 MB higher).
 */
@Injectable()
export class TightHeap implements OnApplicationBootstrap {
  /** Runs under way, and the start-up (its migrations and modules) as one more: the heap a first import starts with. */
  private holders = 0;

  constructor(private readonly config: AppConfig) {
    this.hold();
  }

  onApplicationBootstrap(): void {
    this.release();
  }

  /** `work`, with the heap kept tight until it and every other run of this process have ended. */
  async during<T>(work: () => Promise<T>): Promise<T> {
    this.hold();
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private hold(): void {
    if (this.holders++ === 0 && this.config.heapGrowthPercent > 0) setFlagsFromString(`--heap-growing-percent=${this.config.heapGrowthPercent}`);
  }

  private release(): void {
    if (--this.holders === 0 && this.config.heapGrowthPercent > 0) setFlagsFromString('--heap-growing-percent=0');
  }
}
