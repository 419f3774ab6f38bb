// Jest's node environment, plus: what the services a test starts log (in process or spawned) is kept aside while the
// test runs and printed only if it fails, so that a passing run prints its summary alone and a failing test shows
// the logs that explain it. Test code writes there through test/support/test-log.ts.
const { TestEnvironment } = require('jest-environment-node');

/** At most this much kept per test: a runaway log must not take the worker's memory. */
const MAX_CHARS = 1_000_000;

class QuietEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.kept = [];
    this.size = 0;
    this.dropped = 0;
    this.global.__TEST_LOG__ = { write: (text) => this.keep(String(text)) };
  }

  keep(text) {
    this.kept.push(text);
    this.size += text.length;
    while (this.size > MAX_CHARS && this.kept.length > 1) {
      this.size -= this.kept.shift().length;
      this.dropped++;
    }
  }

  /** Prints what was kept (under a heading naming whose it is), or drops it. */
  release(print, heading) {
    if (print && this.kept.length > 0) {
      const text = this.kept.join('');
      const lines = text.endsWith('\n') ? text : `${text}\n`;
      const dropped = this.dropped ? `(the first ${this.dropped} writes dropped: over ${MAX_CHARS} characters in all)\n` : '';
      process.stdout.write(`\n── logs while ${heading} failed ──\n${dropped}${lines}── end of those logs ──\n`);
    }
    this.kept = [];
    this.size = 0;
    this.dropped = 0;
  }

  async handleTestEvent(event) {
    if (event.name === 'test_done') this.release(event.test.errors.length > 0, `"${fullName(event.test)}"`);
    if (event.name === 'hook_failure') this.release(true, `${event.hook.type} of "${event.hook.parent.name}"`);
  }
}

function fullName(test) {
  const names = [];
  for (let block = test; block && block.name !== 'ROOT_DESCRIBE_BLOCK'; block = block.parent) names.unshift(block.name);
  return names.join(' › ');
}

module.exports = QuietEnvironment;
