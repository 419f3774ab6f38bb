import { Logger, LoggerService } from '@nestjs/common';
import { testLog } from './test-log';

/** One line per message: level, context (Nest passes it last), message. */
function line(level: string): (message: unknown, ...params: unknown[]) => void {
  return (message, ...params) => {
    const context = params.length > 0 && typeof params.at(-1) === 'string' ? ` [${params.at(-1) as string}]` : '';
    const text = message instanceof Error ? (message.stack ?? message.message) : typeof message === 'string' ? message : JSON.stringify(message);
    testLog.write(`${level}${context} ${text}\n`);
  };
}

/**
 * Nest's own logger, for code a test runs without a service around it (the migrator, a repository): its lines are
 * kept with the services' logs and printed only if the test fails. A service started by the test logs through its
 * own logger, which replaces this one.
 */
const kept: LoggerService = {
  log: line('LOG'),
  error: line('ERROR'),
  warn: line('WARN'),
  debug: line('DEBUG'),
  verbose: line('VERBOSE'),
  fatal: line('FATAL'),
};
Logger.overrideLogger(kept);
