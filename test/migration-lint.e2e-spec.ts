import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { MIGRATIONS_DIR } from '../src/database/database.service';
import { concurrentIndexName, MigrationFile, readMigrations, runsOutsideTransaction } from '../src/database/migrator';
import { splitStatements } from '../src/database/sql-statements';

const run = promisify(execFile);
const ROOT = join(__dirname, '..');
// squawk's binary for Linux x64 (an optional dependency: the npm registry here carries no other platform's).
const SQUAWK = join(ROOT, 'node_modules', '@squawk-cli', 'linux-x64', 'bin', 'squawk');
const CONFIG = join(ROOT, '.squawk.toml');

/** A migration whose name ends so removes what an earlier release stopped using (docs/development.md, Migrations). */
const isContract = (name: string) => name.endsWith('_contract');
/** What only a contract migration may do: drop or rename what the previous release still reads. */
const CONTRACT_RULES = ['ban-drop-column', 'ban-drop-table', 'renaming-column', 'renaming-table', 'ban-drop-not-null'];

/** A list of .squawk.toml's, by its key. */
function configList(key: string): string[] {
  const config = readFileSync(CONFIG, 'utf8');
  const list = new RegExp(String.raw`${key}\s*=\s*\[([\s\S]*?)\]`).exec(config)?.[1] ?? '';
  return [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
}

/** The pre-cut-over migrations .squawk.toml lists once, with why. */
const excludedPaths = () => new Set(configList('excluded_paths'));

interface Finding {
  file: string;
  rule: string;
  message: string;
}

/** squawk's findings for these files (its exit code is 1 when it has any), as the migrator would run them. */
async function squawk(files: string[], options: { inTransaction: boolean; contract: boolean }): Promise<Finding[]> {
  if (files.length === 0) return [];
  const args = ['--config', CONFIG, '--reporter', 'gcc', options.inTransaction ? '--assume-in-transaction' : '--no-assume-in-transaction'];
  // squawk's --exclude replaces the config's excluded_rules rather than adding to them.
  if (options.contract) args.push(`--exclude=${[...configList('excluded_rules'), ...CONTRACT_RULES].join(',')}`);
  const output = await run(SQUAWK, [...args, ...files], { cwd: ROOT }).then(
    ({ stdout }) => stdout,
    (error: { code?: number; stdout?: string; stderr?: string }) => {
      if (error.code === 1 && error.stdout) return error.stdout;
      throw new Error(`squawk failed to run (${error.code}): ${error.stderr ?? ''}`);
    },
  );
  return output
    .split('\n')
    .map((line) => /^(.+?):\d+:\d+: (?:warning|error): (\S+) (.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ file: relative(ROOT, join(ROOT, m[1])), rule: m[2], message: m[3] }));
}

/** Every migration not listed as before the cut-over, linted in the four groups the migrator and the rules make. */
async function lint(directory: string, migrations: MigrationFile[]): Promise<Finding[]> {
  const excluded = excludedPaths();
  const path = (m: MigrationFile) => relative(ROOT, join(directory, m.name, 'migration.sql'));
  const linted = migrations.filter((m) => !excluded.has(path(m)));
  const findings: Finding[] = [];
  for (const inTransaction of [true, false]) {
    for (const contract of [false, true]) {
      const group = linted.filter((m) => runsOutsideTransaction(m.script) !== inTransaction && isContract(m.name) === contract);
      findings.push(...(await squawk(group.map(path), { inTransaction, contract })));
    }
  }
  return findings;
}

/**
 * What a migration run outside a transaction must be to be run again after a crash midway (the migrator resumes it
 * so): only index builds and drops, each saying IF NOT EXISTS or IF EXISTS. Anything else (a VALIDATE CONSTRAINT, a
 * column) goes in a migration of its own, in a transaction.
 */
function notRerunnable(migration: MigrationFile): string[] {
  if (!runsOutsideTransaction(migration.script)) return [];
  return splitStatements(migration.script)
    .map((statement) => statement.replace(/--[^\n]*\n?/g, '').trim())
    .filter((statement) => {
      if (concurrentIndexName(statement) !== undefined) return !/\bIF\s+NOT\s+EXISTS\b/i.test(statement);
      if (/^DROP\s+INDEX\s+CONCURRENTLY\b/i.test(statement)) return !/\bIF\s+EXISTS\b/i.test(statement);
      return true;
    })
    .map((statement) => `${migration.name}: ${statement.split('\n')[0]}`);
}

describe('migration lint (squawk and the online rules, docs/development.md)', () => {
  let scratch: string;

  beforeAll(() => {
    // Under the repository, so that the paths squawk reports read like prisma/migrations' own.
    scratch = mkdtempSync(join(ROOT, '.migration-lint-'));
  });

  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  const scratchMigration = (name: string, script: string): MigrationFile => {
    mkdirSync(join(scratch, name), { recursive: true });
    writeFileSync(join(scratch, name, 'migration.sql'), script);
    return readMigrations(scratch).find((m) => m.name === name)!;
  };

  it('finds nothing in the migrations after the cut-over, and the online rules hold for all of them', async () => {
    const migrations = readMigrations(MIGRATIONS_DIR);
    expect(await lint(MIGRATIONS_DIR, migrations)).toEqual([]);
    expect(migrations.flatMap(notRerunnable)).toEqual([]);
  });

  it('lists only migrations that exist before the cut-over: a new one cannot hide there', () => {
    const shipped = new Set(readMigrations(MIGRATIONS_DIR).map((m) => relative(ROOT, join(MIGRATIONS_DIR, m.name, 'migration.sql'))));
    const excluded = [...excludedPaths()];
    expect(excluded.filter((path) => !shipped.has(path))).toEqual([]);
    // The cut-over: release 0.1.0's last migration. Anything later is linted.
    expect(excluded.every((path) => path.split('/')[2] <= '20261211100000_statistics_targets')).toBe(true);
  });

  it('fails what would hold a table or break the previous release, and lets a contract migration drop', async () => {
    const blocking = scratchMigration(
      '99990101000000_blocking',
      'CREATE INDEX "post_title_idx" ON "post" ("title");\nALTER TABLE "post" ADD CONSTRAINT "post_title_check" CHECK (length("title") > 0);\nALTER TABLE "post" DROP COLUMN "title";\n',
    );
    const rules = (await lint(scratch, [blocking])).map((f) => f.rule).sort();
    expect(rules).toEqual(['ban-drop-column', 'constraint-missing-not-valid', 'require-concurrent-index-creation']);

    const online = scratchMigration(
      '99990102000000_online',
      'ALTER TABLE "post" ADD COLUMN "subtitle" TEXT;\nALTER TABLE "post" ADD CONSTRAINT "post_subtitle_check" CHECK (length("subtitle") > 0) NOT VALID;\n',
    );
    const concurrent = scratchMigration(
      '99990103000000_index',
      'CREATE INDEX CONCURRENTLY IF NOT EXISTS "post_subtitle_idx" ON "post" ("subtitle");\nDROP INDEX CONCURRENTLY IF EXISTS "post_title_idx";\n',
    );
    const validate = scratchMigration('99990103100000_validate', 'ALTER TABLE "post" VALIDATE CONSTRAINT "post_subtitle_check";\n');
    const contract = scratchMigration('99990104000000_drop_subtitle_contract', 'ALTER TABLE "post" DROP COLUMN "subtitle";\n');
    expect(await lint(scratch, [online, concurrent, validate, contract])).toEqual([]);
    expect([online, concurrent, validate, contract].flatMap(notRerunnable)).toEqual([]);

    const rerun = scratchMigration('99990105000000_not_rerunnable', 'CREATE INDEX CONCURRENTLY "post_x_idx" ON "post" ("title");\n');
    expect(notRerunnable(rerun)).toEqual(['99990105000000_not_rerunnable: CREATE INDEX CONCURRENTLY "post_x_idx" ON "post" ("title")']);
  });

  it("names every migration in CHANGELOG.md under a release, a contract marked so, and the newest release is package.json's", () => {
    const changelog = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8');
    const lineOf = (name: string) => changelog.split('\n').find((line) => line.includes(`\`${name}\``));
    const migrations = readMigrations(MIGRATIONS_DIR).map((m) => m.name);
    expect(migrations.filter((name) => lineOf(name) === undefined)).toEqual([]);
    expect(migrations.filter((name) => isContract(name) !== /\bcontract\b/.test(lineOf(name) ?? ''))).toEqual([]);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(/^## (\S+)/m.exec(changelog)?.[1]).toBe(version);
  });
});
