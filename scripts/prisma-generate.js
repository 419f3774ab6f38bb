#!/usr/bin/env node
// `prisma generate` never runs Prisma's Rust schema engine, but the CLI insists on finding (or downloading)
// it first, and the download cannot work offline. Pointing it at any existing file satisfies the check.
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const env = {
  ...process.env,
  PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY || process.execPath,
  PRISMA_HIDE_UPDATE_MESSAGE: '1',
  CHECKPOINT_DISABLE: '1',
  // The prisma-kysely generator is a package binary; `node scripts/prisma-generate.js` run outside npm lacks it on PATH.
  PATH: [path.join(__dirname, '..', 'node_modules', '.bin'), process.env.PATH].filter(Boolean).join(path.delimiter),
};
const cli = path.join(__dirname, '..', 'node_modules', 'prisma', 'build', 'index.js');
const result = spawnSync(process.execPath, [cli, 'generate'], { stdio: 'inherit', env, cwd: path.join(__dirname, '..') });
process.exit(result.status ?? 1);
