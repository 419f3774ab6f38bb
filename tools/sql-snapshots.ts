import 'reflect-metadata';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join, relative } from 'node:path';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from 'kysely';
import { format } from 'sql-formatter';
import { AppConfig } from '../src/config/app-config';
import { DatabaseService } from '../src/database/database.service';
import { Sample, SQL_SAMPLES, type SqlSample } from '../src/database/sql-snapshot';
import type { DB } from '../src/generated/kysely/database';

/**
 * `npm run sql:snapshots`: calls each repository method with the samples of its `@GenerateSql`
 * (src/database/sql-snapshot.ts) on a Kysely whose driver records each statement instead of sending it (every
 * statement answers no rows), and writes them, formatted, into src/queries/<file>.sql. No database is needed.
 * test/sql-snapshots.e2e-spec.ts renders them the same way and fails when the checked-in files differ.
 */

/** The repository root, from tools/ (Jest) and dist-tools/tools/ (the built command) alike. */
export const ROOT = findUp(__dirname, 'package.json');
export const QUERIES_DIR = join(ROOT, 'src', 'queries');
const SOURCE_ROOT = join(__dirname, '..', 'src');
const EXTENSION = extname(__filename);

/** Statements one sample may send at most: a method that loops on an empty answer would otherwise never end. */
const MOST_STATEMENTS = 50;
const SAMPLE_TIMEOUT_MS = 5_000;

function findUp(from: string, name: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, name))) return dir;
    if (dirname(dir) === dir) throw new Error(`No ${name} above ${from}`);
  }
}

/**
 * Records what it is asked to run, and answers each statement the sample's rows for it (none by default).
 * Transaction control is not recorded.
 */
class RecordingDriver implements Driver {
  readonly statements: CompiledQuery[] = [];

  constructor(private readonly answers: readonly (readonly object[])[]) {}

  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        if (this.statements.length >= MOST_STATEMENTS) throw new Error(`more than ${MOST_STATEMENTS} statements`);
        const rows = (this.answers[this.statements.length] ?? []) as R[];
        this.statements.push(query);
        return { rows };
      },
      // eslint-disable-next-line require-yield
      streamQuery: async function* () {
        throw new Error('streamed statements are not rendered');
      },
    };
  }
  async beginTransaction(): Promise<void> {}
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

type Constructor = abstract new (...args: never[]) => unknown;

/** A repository class, the file that declares it, and the file its snapshot goes to. */
export interface Repository {
  owner: Constructor;
  source: string;
  snapshot: string;
}

/**
 * The classes whose statements are rendered: those constructed with a DatabaseService in the repository files
 * (`*.repository.ts`) and the query endpoints' files (`*.query.ts` outside `dto/`).
 */
export function repositories(): Repository[] {
  const found: Repository[] = [];
  for (const file of sourceFiles(SOURCE_ROOT)) {
    // The files are found by name, so they are loaded by name: each one's decorators register its samples.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const exports = require(file) as Record<string, unknown>;
    for (const value of Object.values(exports)) {
      if (typeof value !== 'function' || !parameterTypes(value as Constructor).includes(DatabaseService)) continue;
      const source = relative(SOURCE_ROOT, file).replace(/\.js$/, '.ts');
      found.push({ owner: value as Constructor, source: `src/${source}`, snapshot: `${basename(source, '.ts')}.sql` });
    }
  }
  return found.sort((a, b) => a.source.localeCompare(b.source) || a.owner.name.localeCompare(b.owner.name));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === 'dto' || entry.name === 'generated' ? [] : sourceFiles(path);
      return entry.name.endsWith(`.repository${EXTENSION}`) || entry.name.endsWith(`.query${EXTENSION}`) ? [path] : [];
    })
    .sort();
}

const parameterTypes = (owner: Constructor): unknown[] => (Reflect.getMetadata('design:paramtypes', owner) as unknown[] | undefined) ?? [];

/** The methods a class declares (getters and the constructor aside). */
export function declaredMethods(owner: Constructor): string[] {
  const prototype = owner.prototype as object;
  return Object.getOwnPropertyNames(prototype).filter((name) => {
    const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
    return name !== 'constructor' && typeof descriptor?.value === 'function';
  });
}

/**
 * An instance whose DatabaseService records statements. Other repositories it takes are built the same way; any
 * other collaborator is an instance whose constructor never ran (what a method calls on it after its statements
 * may fail: the statements are recorded by then).
 */
function instantiate(owner: Constructor, database: DatabaseService): Record<string, (...args: unknown[]) => unknown> {
  const args = parameterTypes(owner).map((type) => {
    if (type === DatabaseService) return database;
    if (type === AppConfig) return { secretsEncryptionKeys: [{ id: 'k1', key: Buffer.alloc(32) }] };
    if (typeof type === 'function' && parameterTypes(type as Constructor).includes(DatabaseService))
      return instantiate(type as Constructor, database);
    return typeof type === 'function' ? (Object.create((type as Constructor).prototype as object) as unknown) : undefined;
  });
  return Reflect.construct(owner, args) as Record<string, (...args: unknown[]) => unknown>;
}

/** The statements one sample sends, or the error when it sends none. */
async function record(owner: Constructor, method: string, sample: Exclude<SqlSample, { none: string }>): Promise<CompiledQuery[]> {
  const driver = new RecordingDriver(sample.answers ?? []);
  const db = new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (kysely) => new PostgresIntrospector(kysely),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  const database = { db } as DatabaseService;
  let failure: unknown;
  let timer: NodeJS.Timeout | undefined;
  try {
    const params = sample.params.map((param) => (param === Sample.DB ? db : param));
    const call = Promise.resolve().then(() => instantiate(owner, database)[method](...params));
    const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), SAMPLE_TIMEOUT_MS)));
    await Promise.race([call, timeout]);
  } catch (error) {
    failure = error;
  } finally {
    clearTimeout(timer);
  }
  if (!driver.statements.length) {
    throw new Error(`${owner.name}.${method} sent no statement${failure ? `: ${failure instanceof Error ? failure.message : 'it threw'}` : ''}`, {
      cause: failure,
    });
  }
  return driver.statements;
}

const formatted = (statement: CompiledQuery): string => format(statement.sql, { language: 'postgresql', keywordCase: 'lower' });

/** Each snapshot file's text, by file name. */
export async function render(): Promise<Map<string, string>> {
  const files = new Map<string, string[]>();
  const failures: string[] = [];
  for (const { owner, source, snapshot } of repositories()) {
    const sections = files.get(snapshot) ?? [`-- Generated by \`npm run sql:snapshots\` from ${source}: do not edit.`];
    files.set(snapshot, sections);
    for (const [method, samples] of SQL_SAMPLES.get(owner) ?? []) {
      for (const sample of samples) {
        if ('none' in sample) continue;
        const title = `-- ${owner.name}.${method}${sample.name ? ` (${sample.name})` : ''}`;
        try {
          const statements = await record(owner, method, sample);
          sections.push([title, ...statements.map((statement) => `${formatted(statement)};`)].join('\n'));
        } catch (error) {
          failures.push(`${source}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    }
  }
  if (failures.length) throw new Error(`Samples that sent no statement:\n${failures.join('\n')}`);
  return new Map([...files].map(([name, sections]) => [name, `${sections.join('\n\n')}\n`]));
}

/** Writes the snapshots, and removes those of files that no longer exist. */
async function main(): Promise<void> {
  const rendered = await render();
  mkdirSync(QUERIES_DIR, { recursive: true });
  for (const name of readdirSync(QUERIES_DIR)) if (name.endsWith('.sql') && !rendered.has(name)) rmSync(join(QUERIES_DIR, name));
  for (const [name, text] of rendered) {
    const path = join(QUERIES_DIR, name);
    if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
  }
  process.stdout.write(`${rendered.size} snapshot files in ${relative(process.cwd(), QUERIES_DIR) || '.'}\n`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
