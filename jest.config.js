/** @type {import('jest').Config} */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      // Nest's dependency injection reads the constructor parameter types that decorator metadata records.
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];

module.exports = {
  rootDir: '.',
  // Node's, with the services' logs kept aside and printed only for a test that fails.
  testEnvironment: '<rootDir>/test/support/quiet-environment.js',
  transform: {
    '^.+\\.ts$': swc,
    // ESM-only packages Node 20 itself loads with require(esm), which Jest's module system cannot, and the OTLP
    // exporter's `import('http')`, which Jest's sandbox refuses without --experimental-vm-modules: compiled to CommonJS.
    '^.+/node_modules/(content-disposition|@opentelemetry/otlp-exporter-base)/.+\\.js$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!(content-disposition|@opentelemetry/otlp-exporter-base)/)'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  setupFiles: ['reflect-metadata', '<rootDir>/test/support/nest-logger.ts'],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  testTimeout: 60_000,
  // Two cores here: more workers only fight over them and over PostgreSQL.
  maxWorkers: 2,
};
