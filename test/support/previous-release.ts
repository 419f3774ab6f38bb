import { execFile } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');

/**
 * The release an upgrade starts from, as CHANGELOG.md names it: the side-by-side test runs it beside this checkout
 * on one database. Moved forward with each release (to the release before the one being made).
 */
export const PREVIOUS_RELEASE = { version: '0.1.0', commit: 'f6e5497d9340af3db907184eab5e7bda63b7f7b9' } as const;

/**
 * The previous release built in a git worktree of this repository (kept under the system's temporary directory and
 * reused while its build is there): its `dist/main.js`, to run as a user of that release would. Its dependencies are
 * this checkout's when its package-lock.json is the same (a symlink), else installed with `npm ci`.
 */
export async function buildPreviousRelease(): Promise<{ main: string; directory: string }> {
  const { commit } = PREVIOUS_RELEASE;
  const directory = join(tmpdir(), `pozy-sync-release-${commit.slice(0, 12)}`);
  const main = join(directory, 'dist', 'main.js');
  if (existsSync(main)) return { main, directory };
  await run('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: ROOT }).catch(() => {
    throw new Error(`Commit ${commit} (release ${PREVIOUS_RELEASE.version}) is not in this clone: clone with its history (not --depth 1)`);
  });
  if (!existsSync(directory)) {
    // A worktree left behind by an earlier run that did not finish its build is pruned first.
    await run('git', ['worktree', 'prune'], { cwd: ROOT });
    await run('git', ['worktree', 'add', '--detach', '--force', directory, commit], { cwd: ROOT });
  }
  const sameLock = readFileSync(join(directory, 'package-lock.json'), 'utf8') === readFileSync(join(ROOT, 'package-lock.json'), 'utf8');
  if (!existsSync(join(directory, 'node_modules'))) {
    if (sameLock || onlyDevToolsAdded(directory)) symlinkSync(join(ROOT, 'node_modules'), join(directory, 'node_modules'), 'dir');
    else await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: directory, maxBuffer: 64 * 1024 * 1024 });
  }
  // Its Prisma client and Kysely types, generated from its own schema, then its build.
  await run(process.execPath, [join(directory, 'scripts', 'prisma-generate.js')], { cwd: directory, maxBuffer: 64 * 1024 * 1024 });
  await run(process.execPath, [join(directory, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: directory,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (!existsSync(main)) throw new Error(`Building release ${PREVIOUS_RELEASE.version} in ${directory} made no dist/main.js`);
  return { main, directory };
}

/**
 * Whether this checkout's dependencies differ from the release's only by development tools it does not run (the
 * linters this checkout added): then its node_modules serves the release as is.
 */
function onlyDevToolsAdded(directory: string): boolean {
  type Manifest = { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const theirs = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as Manifest;
  const ours = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
  const same = (a: Record<string, string> = {}, b: Record<string, string> = {}) => Object.entries(a).every(([name, version]) => b[name] === version);
  return (
    same(theirs.dependencies, ours.dependencies) && same(ours.dependencies, theirs.dependencies) && same(theirs.devDependencies, ours.devDependencies)
  );
}
