import { Logger as NestLogger } from '@nestjs/common';
import { Logger as GraphileLogger } from 'graphile-worker';

const nest = new NestLogger('GraphileWorker');

/** Routes graphile-worker's log lines through Nest's logger, so they share its format and level. */
export const graphileLogger = new GraphileLogger(() => (level, message) => {
  // LogLevel is a const enum with no runtime object (SWC cannot inline it), so compare its string values.
  switch (level as string) {
    case 'error':
      return nest.error(message);
    case 'warning':
      return nest.warn(message);
    case 'info':
      // It logs every job it completes at info: too much for the default level.
      return nest.debug(message);
    default:
      return nest.verbose(message);
  }
});
