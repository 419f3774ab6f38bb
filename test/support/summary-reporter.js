// Ends the run with one plain line, "jest: N passed, N failed, N skipped", that CI can read without parsing Jest.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    process.stdout.write(
      `jest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests} skipped\n`,
    );
  }
}
module.exports = SummaryReporter;
