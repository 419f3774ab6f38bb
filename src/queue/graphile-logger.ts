import { Logger as NestLogger } from '@nestjs/common';
import { Logger as GraphileLogger } from 'graphile-worker';

const nest = new NestLogger('GraphileWorker');

/** Routes graphile-worker's log lines through Nest's logger (so pino), with the job and task they concern as fields. */
export const graphileLogger = new GraphileLogger((scope) => (level, message, meta) => {
  // Job outcomes name their job in `meta.job`; other lines may have it in their scope.
  const job = (meta as { job?: { id?: string; task_identifier?: string } } | undefined)?.job;
  const line = { msg: message, jobId: scope.jobId ?? job?.id, task: scope.taskIdentifier ?? job?.task_identifier };
  // LogLevel is a const enum with no runtime object (SWC cannot inline it), so compare its string values.
  switch (level as string) {
    case 'error':
      return nest.error(line);
    case 'warning':
      return nest.warn(line);
    case 'info':
      // It logs every job it completes at info: too much for the default level.
      return nest.debug(line);
    default:
      return nest.verbose(line);
  }
});
