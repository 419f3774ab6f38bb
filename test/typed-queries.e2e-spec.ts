/**
 * Data access is typed against prisma/schema.prisma: a statement that names a column the schema does not have fails
 * the build. These compile small programs against the repository's own sources and generated types, the way
 * `npm run typecheck` does, and read the compiler's verdict.
 */
import { join } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..');
const PROBE = join(ROOT, 'src', '__typed_query_probe__.ts');

function compilerOptions(): ts.CompilerOptions {
  const configPath = join(ROOT, 'tsconfig.json');
  const { config } = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
  return ts.parseJsonConfigFileContent(config, ts.sys, ROOT).options;
}

// Each compile reuses the previous program's unchanged files (the whole of src/ and the generated types).
let previous: ts.Program | undefined;
// "Declared but never read": the probes' parameters are not all used by every probe.
const UNUSED = 6133;

/** The compiler's error messages for `source`, compiled as a file of src/ beside the real ones. */
function compile(source: string): string[] {
  const options = { ...compilerOptions(), noEmit: true };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (path) => path === PROBE || ts.sys.fileExists(path);
  host.readFile = (path) => (path === PROBE ? source : readFile(path));
  host.getSourceFile = (path, language, onError, create) =>
    path === PROBE ? ts.createSourceFile(path, source, language) : getSourceFile(path, language, onError, create);
  const program = ts.createProgram([PROBE], options, host, previous);
  previous = program;
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file?.fileName === PROBE && d.code !== UNUSED)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

const PRELUDE = `
import type { Db } from './database/database.service';
import type { PrismaClient } from './generated/prisma/client';
export async function probe(db: Db, prisma: PrismaClient): Promise<unknown> {
`;

describe('typed data access', () => {
  it('compiles statements that name the schema’s columns', () => {
    const errors = compile(`${PRELUDE}
      const rows = await db.selectFrom('post').select(['id', 'pozy_updated_at']).where('status', '=', 'published').execute();
      const updated: Date | null = rows[0].pozy_updated_at;
      await db.updateTable('account').set({ removed_at: new Date() }).where('id', '=', 'a').execute();
      return [updated, await prisma.post.findMany({ where: { status: 'published' }, select: { id: true } })];
    }`);
    expect(errors).toEqual([]);
  }, 120_000);

  it('rejects a Kysely statement naming a column the schema does not have', () => {
    const errors = compile(`${PRELUDE}
      return db.selectFrom('post').select(['id', 'pozy_updated']).execute();
    }`);
    expect(errors.join('\n')).toMatch(/pozy_updated/);
  }, 120_000);

  it('rejects a write to a column the schema does not have, and a table it does not have', () => {
    const errors = compile(`${PRELUDE}
      await db.updateTable('account').set({ removed: new Date() }).execute();
      return db.selectFrom('posts').selectAll().execute();
    }`);
    expect(errors).toHaveLength(2);
    expect(errors.join('\n')).toMatch(/removed/);
    expect(errors.join('\n')).toMatch(/posts/);
  }, 120_000);

  it('rejects a Prisma Client query naming a field the schema does not have', () => {
    const errors = compile(`${PRELUDE}
      return prisma.post.findMany({ where: { pozyUpdated: null } });
    }`);
    expect(errors.join('\n')).toMatch(/pozyUpdated/);
  }, 120_000);

  it('types a result column as the schema declares it: a nullable timestamp is not a string', () => {
    const errors = compile(`${PRELUDE}
      const [row] = await db.selectFrom('post').select('deleted_at').execute();
      const text: string = row.deleted_at;
      return text;
    }`);
    expect(errors.join('\n')).toMatch(/not assignable to type 'string'/);
  }, 120_000);
});
