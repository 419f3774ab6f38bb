// Ends the run with one plain line, "jest: N passed, N failed, N skipped", that CI can read without parsing Jest.
// Written at exit, so that it comes after Jest's own summary.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const line = `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests} skipped\n`;
    process.once('exit', () => process.stdout.write(line));
  }
}
module.exports = SummaryReporter;
