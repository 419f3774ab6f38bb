// `npm run test:unit`: the unit specs beside the code (src/**/*.spec.ts) alone, in seconds: no database is started
// (no global setup) and nothing is built first. `npm test` runs them too, with the e2e specs.
const base = require('./jest.config.js');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testMatch: ['<rootDir>/src/**/*.spec.ts'],
  globalSetup: undefined,
  globalTeardown: undefined,
  testTimeout: 5_000,
};
