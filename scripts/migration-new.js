#!/usr/bin/env node
/**
 * npm run migration:new -- <name> [--from <schema file> | --from empty]
 *
 * Writes prisma/migrations/<UTC timestamp>_<name>/migration.sql: the SQL that turns the schema as last committed
 * (`git show HEAD:prisma/schema.prisma`, or --from) into prisma/schema.prisma as it is now; then regenerates the
 * client. Review the SQL before committing it; partial indexes and data changes are added by hand (see the note at
 * the top of schema.prisma).
 *
 * `prisma migrate dev --create-only` does the same where Prisma can download its Rust schema engine. Where it cannot
 * (offline machines, this project's build machines), this script uses Prisma 6's WebAssembly schema engine, which
 * ships inside its npm package: the first run installs prisma@6.19.3 into a cache directory
 * (PRISMA_SCHEMA_DIFF_CACHE, default ~/.cache/pozy-sync/prisma-schema-diff). The diff needs a PostgreSQL to talk to,
 * and changes nothing in it: MIGRATION_DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/postgres.
 */
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } = require('node:fs');
const { homedir, tmpdir } = require('node:os');
const path = require('node:path');

const PRISMA_VERSION = '6.19.3';
const root = path.join(__dirname, '..');
const schemaPath = path.join(root, 'prisma', 'schema.prisma');

function fail(message) {
  console.error(`migration:new: ${message}`);
  process.exit(1);
}

function parseArguments(argv) {
  const args = { name: undefined, from: undefined };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--from') args.from = argv[++i];
    else if (!args.name) args.name = argv[i];
    else fail(`unexpected argument ${argv[i]}`);
  }
  if (!args.name || !/^[a-z0-9_]+$/.test(args.name))
    fail('usage: npm run migration:new -- <name, in lower_snake_case> [--from <schema file> | --from empty]');
  if (args.from !== undefined && args.from !== 'empty' && !existsSync(args.from)) fail(`--from ${args.from}: no such file`);
  return args;
}

/** Prisma 6 wants a datasource URL and no generator; this project's Prisma 7 schema has neither. */
function forPrisma6(schema) {
  const out = [];
  let inGenerator = false;
  for (const line of schema.split('\n')) {
    if (/^\s*generator\s+\w+\s*\{/.test(line)) inGenerator = true;
    if (inGenerator) {
      if (/^\s*\}/.test(line)) inGenerator = false;
      continue;
    }
    if (/^\s*(url|directUrl)\s*=/.test(line)) continue;
    out.push(line);
    if (/^\s*datasource\s+\w+\s*\{/.test(line)) out.push('  url = env("DATABASE_URL")');
  }
  return out.join('\n');
}

function ensurePrisma6(cache) {
  const cli = path.join(cache, 'node_modules', '.bin', 'prisma');
  if (existsSync(cli)) return cli;
  console.error(`migration:new: installing Prisma ${PRISMA_VERSION}'s WebAssembly schema engine into ${cache} (once)`);
  mkdirSync(cache, { recursive: true });
  if (!existsSync(path.join(cache, 'package.json'))) writeFileSync(path.join(cache, 'package.json'), '{ "private": true }\n');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const installed = spawnSync(
    npm,
    ['install', '--no-audit', '--no-fund', '--silent', `prisma@${PRISMA_VERSION}`, `@prisma/adapter-pg@${PRISMA_VERSION}`, 'pg@8'],
    { cwd: cache, stdio: 'inherit' },
  );
  if (installed.status !== 0 || !existsSync(cli)) fail(`installing prisma@${PRISMA_VERSION} failed`);
  return cli;
}

function main() {
  const args = parseArguments(process.argv.slice(2));
  const cache = process.env.PRISMA_SCHEMA_DIFF_CACHE || path.join(homedir(), '.cache', 'pozy-sync', 'prisma-schema-diff');
  const cli = ensurePrisma6(cache);
  const work = mkdtempSync(path.join(tmpdir(), 'pozy-migration-'));
  try {
    writeFileSync(path.join(work, 'to.prisma'), forPrisma6(readFileSync(schemaPath, 'utf8')));
    let fromArgs = ['--from-empty'];
    if (args.from !== 'empty') {
      const from = args.from
        ? readFileSync(args.from, 'utf8')
        : execFileSync('git', ['show', 'HEAD:prisma/schema.prisma'], { cwd: root, encoding: 'utf8' });
      writeFileSync(path.join(work, 'from.prisma'), forPrisma6(from));
      fromArgs = ['--from-schema-datamodel', 'from.prisma'];
    }
    // The JavaScript engine with a driver adapter: Prisma then runs its WebAssembly schema engine, no download.
    writeFileSync(
      path.join(work, 'prisma.config.ts'),
      [
        "import { defineConfig } from 'prisma/config';",
        "import { PrismaPg } from '@prisma/adapter-pg';",
        'export default defineConfig({',
        "  experimental: { adapter: true }, engine: 'js', schema: 'to.prisma',",
        '  adapter: async () => new PrismaPg({ connectionString: process.env.DATABASE_URL! }),',
        '});',
        '',
      ].join('\n'),
    );
    symlinkSync(path.join(cache, 'node_modules'), path.join(work, 'node_modules'), 'dir');
    const diff = spawnSync(cli, ['migrate', 'diff', ...fromArgs, '--to-schema-datamodel', 'to.prisma', '--script'], {
      cwd: work,
      encoding: 'utf8',
      env: {
        ...process.env,
        DATABASE_URL: process.env.MIGRATION_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres',
        PRISMA_HIDE_UPDATE_MESSAGE: '1',
        // Never the Rust engines: the point is to need none.
        PRISMA_QUERY_ENGINE_LIBRARY: '/bin/false',
        PRISMA_SCHEMA_ENGINE_BINARY: '/bin/false',
      },
    });
    if (diff.status !== 0) fail(`prisma migrate diff failed:\n${diff.stderr}`);
    const sql = diff.stdout
      .split('\n')
      .filter((line) => !line.startsWith('Loaded Prisma config'))
      .join('\n')
      .trim();
    if (sql === '' || /^-- This is an empty migration\.?$/.test(sql)) {
      console.log('migration:new: prisma/schema.prisma does not differ from the schema it was compared with; nothing written');
      return;
    }
    const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
    const folder = path.join(root, 'prisma', 'migrations', `${stamp}_${args.name}`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'migration.sql'), `${sql}\n`);
    console.log(`migration:new: wrote ${path.relative(root, path.join(folder, 'migration.sql'))}; review it, then commit it`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const generated = spawnSync(process.execPath, [path.join(__dirname, 'prisma-generate.js')], { cwd: root, stdio: 'inherit' });
  process.exit(generated.status ?? 1);
}

main();
