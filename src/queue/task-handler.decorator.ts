import { DiscoveryService } from '@nestjs/core';
import type { JobHelpers } from 'graphile-worker';
import type { TaskName, TaskPayload } from './tasks';

/** Marks a provider as the handler of one task; the worker finds it at boot. */
export const TaskHandler = DiscoveryService.createDecorator<TaskName>();

export interface JobHandler<N extends TaskName> {
  handle(payload: TaskPayload<N>, helpers: JobHelpers): Promise<void>;
}
