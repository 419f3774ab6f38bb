import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = join(__dirname, '..');
/** The folders outside src/ that are no part of the service (tsconfig.tools.json builds them into dist-tools/). */
const TOOLS = ['simulator', 'bench', 'demo'];

interface Stage {
  name: string;
  base: string;
  /** Its instructions, continuation lines joined, comments left out. */
  instructions: string[];
}

function dockerStages(dockerfile: string): Stage[] {
  const stages: Stage[] = [];
  const lines = dockerfile.replace(/\\\n/g, ' ').split('\n');
  for (const line of lines.map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) stages.push({ base: from[1], name: from[2] ?? `stage ${stages.length}`, instructions: [] });
    else stages.at(-1)?.instructions.push(line);
  }
  return stages;
}

/** The stage and the stages it is built FROM, nearest first. */
function lineage(stages: Stage[], name: string): Stage[] {
  const stage = stages.find((s) => s.name === name);
  return stage ? [stage, ...lineage(stages, stage.base)] : [];
}

/** What a stage's COPY instructions take from the build context (not `--from` another stage): their sources. */
function contextSources(stage: Stage): string[] {
  return stage.instructions.flatMap((instruction) => {
    const words = instruction.split(/\s+/);
    if (words[0].toUpperCase() !== 'COPY' || words.some((w) => w.startsWith('--from='))) return [];
    return words.slice(1, -1).filter((w) => !w.startsWith('--'));
  });
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? jsFiles(path) : path.endsWith('.js') ? [path] : [];
  });
}

function directories(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => [join(dir, entry.name), ...directories(join(dir, entry.name))]);
}

/** Every module specifier a compiled CommonJS file requires. */
const requiredBy = (file: string) => [...readFileSync(file, 'utf8').matchAll(/\brequire\((["'])([^"']+)\1\)/g)].map((m) => m[2]);

const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

describe('the production build (the Dockerfile: the build stage compiles, the default target runs)', () => {
  const stages = dockerStages(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
  const runStage = stages.at(-1)!;
  let workDir: string;
  let dist: string;

  beforeAll(() => {
    // The build stage's own files, copied as its COPY instructions copy them, into a directory of their own: built
    // there, `npm run build` sees nothing else of the repository, as in the image. npm ci's postinstall generates
    // src/generated in the image; the working tree's copy (under src/) stands in for it, and node_modules is linked.
    workDir = mkdtempSync(join(tmpdir(), 'pozy-production-build-'));
    for (const source of lineage(stages, 'build').flatMap(contextSources)) cpSync(join(ROOT, source), join(workDir, source), { recursive: true });
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(workDir, 'node_modules'), 'dir');
    const build = spawnSync('npm', ['run', 'build'], { cwd: workDir, encoding: 'utf8', env: { ...process.env, NO_UPDATE_NOTIFIER: '1' } });
    if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}\n${build.stderr}`);
    dist = join(workDir, 'dist');
  }, 300_000);

  afterAll(() => {
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('gives the build stage no simulator, bench or demo sources', () => {
    const sources = lineage(stages, 'build').flatMap(contextSources);
    expect(sources).toContain('src');
    expect(sources.filter((source) => TOOLS.some((tool) => source === tool || source.startsWith(`${tool}/`)))).toEqual([]);
  });

  it('runs, by default, the service from the build stage: dist/, production dependencies, nothing of the tools', () => {
    const copies = runStage.instructions.filter((i) => /^COPY\s/i.test(i));
    expect(copies.length).toBeGreaterThan(0);
    // Everything comes from the build stage, whose node_modules was pruned to production dependencies.
    expect(copies.filter((copy) => !/--from=build\s/.test(copy))).toEqual([]);
    expect(copies.filter((copy) => /dist-tools|simulator|bench|demo/.test(copy))).toEqual([]);
    expect(lineage(stages, 'build').some((stage) => stage.instructions.some((i) => /npm prune --omit=dev/.test(i)))).toBe(true);
    expect(runStage.instructions).toContainEqual('CMD ["node", "dist/main.js"]');
  });

  it('builds the service into dist/ with no simulator, bench or demo folder', () => {
    expect(existsSync(join(dist, 'main.js'))).toBe(true);
    const toolFolders = directories(dist).filter((dir) => TOOLS.includes(dir.split(sep).at(-1)!));
    expect(toolFolders.map((dir) => relative(workDir, dir))).toEqual([]);
  });

  it('has no file in dist/ that requires autocannon, another dev dependency, or anything outside dist/', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const devDependencies = new Set(Object.keys(pkg.devDependencies));
    expect(devDependencies).toContain('autocannon');
    const files = jsFiles(dist);
    expect(files.length).toBeGreaterThan(50);

    const offending: string[] = [];
    for (const file of files) {
      for (const specifier of requiredBy(file)) {
        const where = relative(workDir, file);
        if (specifier.startsWith('.')) {
          // A relative require must stay within dist/ (the image has nothing else of the repository).
          const target = resolve(dirname(file), specifier);
          if (!target.startsWith(dist + sep)) offending.push(`${where} requires ${specifier} (outside dist/)`);
        } else if (devDependencies.has(packageOf(specifier))) {
          offending.push(`${where} requires ${specifier} (a dev dependency)`);
        }
      }
    }
    expect(offending).toEqual([]);
  });
});
