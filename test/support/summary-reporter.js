// Ends the run with the failed tests, one line each, and one plain line, "jest: N passed, N failed, N skipped", that
// CI can read without parsing Jest. Written at exit, so that it comes after Jest's own summary: a log cut to its end
// still names what failed.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = [];
    for (const suite of results.testResults) {
      const file = suite.testFilePath.replace(`${process.cwd()}/`, '');
      if (suite.testExecError) failed.push(`FAILED ${file}: ${firstLine(suite.testExecError.message)}`);
      for (const test of suite.testResults) {
        if (test.status === 'failed') failed.push(`FAILED ${file} › ${test.fullName}: ${firstLine(test.failureMessages.join('\n'))}`);
      }
    }
    const summary = `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests} skipped\n`;
    const lines = failed.map((line) => `${line}\n`).join('') + summary;
    process.once('exit', () => process.stdout.write(lines));
  }
}

function firstLine(text) {
  // Jest's messages carry colour codes and start with blank lines.
  const plain = String(text ?? '').replace(/\u001b\[[0-9;]*m/g, '');
  const line =
    plain
      .split('\n')
      .map((part) => part.trim())
      .find((part) => part.length > 0) ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

module.exports = SummaryReporter;
