// @ts-check
import eslint from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// Module layers, lowest first (docs/architecture.md): a module imports only from its own layer or the ones below.
// Features publish into metrics and call the stores, the pozy client and the queue; views (health, admin, status
// page) read the features. read-tokens provides common/'s read guards with the tokens made through the API.
const LAYERS = [
  ['config', 'generated'],
  ['common', 'logging', 'http', 'tracing'],
  ['database', 'metrics'],
  ['queue', 'receive', 'pozy', 'dead-letters', 'notifications', 'changes', 'read-tokens', 'workspaces'],
  ['mirror'],
  ['reconcile'],
  ['webhooks', 'backfill', 'runs', 'retention', 'schedule'],
  ['health', 'admin', 'status-page', 'workspace-admin'],
];

/** One config per layer: its files may not import a module of any higher layer (nor the tools outside src/). */
const layerRules = LAYERS.map((modules, i) => {
  const higher = LAYERS.slice(i + 1).flat();
  return {
    files: modules.map((m) => `src/${m}/**/*.ts`),
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...(higher.length
              ? [
                  {
                    regex: `^(\\.\\./)+(${higher.join('|')})(/|$)`,
                    message: `A lower layer (${modules.join(', ')}) must not import a higher one; see docs/architecture.md.`,
                  },
                ]
              : []),
            { regex: '^(\\.\\./)+(tools|simulator|bench|demo)(/|$)', message: 'The service never imports the tools.' },
          ],
        },
      ],
    },
  };
});

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'dist-tools/',
      'coverage/',
      'node_modules/',
      'src/generated/',
      '.data/',
      'eslint.config.mjs',
      'scripts/',
      'prisma.config.ts',
      'jest.config.js',
      'jest.unit.config.js',
      'test/support/summary-reporter.js',
      'test/support/quiet-environment.js',
      'examples/',
      'packages/client/dist/',
      'packages/client/scripts/',
      'packages/client/src/schema.ts',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node, ...globals.jest },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    files: ['test/**/*.ts', 'src/**/*.spec.ts'],
    rules: {
      // Jest's expect(...).resolves and supertest-style chains read naturally with these off.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  ...layerRules,
  {
    // The tools run without the tests: code both use lives in the tools (such as simulator/mirror-check.ts).
    files: ['simulator/**/*.ts', 'bench/**/*.ts', 'demo/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(\\.\\./)+test(/|$)', message: 'The tools never import test code.' }] }],
    },
  },
);
