import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isKnownExample, KNOWN_EXAMPLE_SECRETS } from './known-examples';

const ROOT = join(__dirname, '..', '..');

/** Where the repository shows values a reader may copy: its examples, its defaults, its documentation. */
const SCANNED = ['docker-compose.yml', 'compose.simulator.env', 'README.md', 'docs', 'Dockerfile', 'examples', 'simulator', 'demo'];

/** Words the README and docs/ write where a value goes, that no variable takes as a secret. */
const PROSE = new Set([
  // "set `API_TOKENS=old,new` and restart": a rotation described; both are refused as tokens (shorter than 16).
  'old',
  'new',
  // API_TOKENS=none: open reads chosen, no secret.
  'none',
]);

function filesUnder(path: string): string[] {
  const full = join(ROOT, path);
  if (!statSync(full).isDirectory()) return [full];
  return readdirSync(full).flatMap((entry) => filesUnder(join(path, entry)));
}

/** A name that says its value is a secret: POZY_API_KEY, ADMIN_TOKEN, API_TOKENS, POSTGRES_PASSWORD, apiKey, secret. */
const SECRET_NAME = String.raw`[A-Za-z_][A-Za-z0-9_]*?(?:key|secret|token|password)s?`;
/** A value where one is assigned: a ${...} reference, a quoted string, or a bare word (up to a space, a backtick or a quote). */
const VALUE = String.raw`(\$\{[^}]*\}|"[^"]*"|'[^']*'|[^\s\`'"]+)`;
// Not a name inside a reference (${ADMIN_TOKEN:?message}): that one assigns nothing.
const ASSIGNMENT = new RegExp(String.raw`(?<!\{)\b(${SECRET_NAME})["']?\s*[:=]\s*${VALUE}`, 'gi');
/** Code's own defaults: process.env.X || 'value', process.env.X ?? 'value'. */
const ENV_DEFAULT = new RegExp(String.raw`process\.env\.(${SECRET_NAME})\s*(?:\|\||\?\?)\s*(['"])(.*?)\2`, 'gi');
/** Secrets recognisable wherever they stand: Pozy keys, webhook secrets, id:base64 encryption keys, URL passwords. */
const SHAPES = [/\bsk_[A-Za-z0-9_]{2,}/g, /\bwhsec_[A-Za-z0-9+/=_]{2,}/g, /\b[A-Za-z0-9_-]{1,32}:[A-Za-z0-9+/]{43}=/g];
const URL_PASSWORD = /\bpostgres(?:ql)?:\/\/[^:/\s@]+:([^@\s]+)@/g;

/** The secret values one assigned text stands for: none for a reference or a placeholder, each entry of a list. */
function valuesOf(raw: string, code: boolean): string[] {
  const quoted = /^(["'`])(.*)\1$/.exec(raw);
  // In code, a bare word is an identifier or an expression, not a value.
  if (code && !quoted) return [];
  // Placeholders: sk_…, sk_..., <new>.
  if (/…|\.\.\.|[<>]/.test(raw)) return [];
  let value = quoted ? quoted[2] : raw.replace(/[.,;:)]+$/, '');
  const reference = /^\$\{\w+(:?[-?+])?([^}]*)\}$/.exec(value);
  if (reference) {
    // ${VAR:-default} and ${VAR-default} stand for their default; ${VAR}, ${VAR:?message} for nothing written here.
    if (!reference[1]?.endsWith('-')) return [];
    value = reference[2];
  }
  // What a shell or a template computes: $(openssl rand …), ${…}.
  if (value === '' || /[$*]/.test(value)) return [];
  return value.split(',').filter((entry) => entry !== '');
}

/** Every secret-looking value the file shows, by the rules above. */
function secretsIn(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const code = /\.(ts|mjs|js)$/.test(file);
  return [
    ...[...text.matchAll(ASSIGNMENT)].flatMap((m) => valuesOf(m[2], code)),
    ...[...text.matchAll(ENV_DEFAULT)].map((m) => m[3]),
    ...SHAPES.flatMap((shape) => [...text.matchAll(shape)].map((m) => m[0])),
    ...[...text.matchAll(URL_PASSWORD)].flatMap((m) => valuesOf(m[1], false)),
  ];
}

describe('KNOWN_EXAMPLE_SECRETS', () => {
  const found = SCANNED.flatMap(filesUnder).flatMap((file) => secretsIn(file).map((value) => ({ file: relative(ROOT, file), value })));

  it('holds every secret the examples, defaults and documentation show', () => {
    const missing = found.filter(({ value }) => !isKnownExample(value) && !PROSE.has(value));
    expect(missing).toEqual([]);
  });

  it('is fed by a scan that finds what it should', () => {
    const values = new Set(found.map(({ value }) => value));
    // One of each kind of place: compose's env file, the simulator's code default, an encryption key, a URL password, the demo.
    for (const value of [
      'whsec_simulator_secret',
      'sk_sim_local',
      'compose-default:R7eJBfmLk1iI6g0jr0xLz7jxo/oFMallut9ptXYU3sE=',
      'pozy',
      'demo-admin-token',
    ]) {
      expect(values).toContain(value);
    }
    expect(found.filter(({ value }) => value === 'sk_sim_local').map(({ file }) => file)).toContain('simulator/main.ts');
  });

  it('lists each value once, none empty', () => {
    expect(new Set(KNOWN_EXAMPLE_SECRETS).size).toBe(KNOWN_EXAMPLE_SECRETS.length);
    expect(KNOWN_EXAMPLE_SECRETS.filter((value) => value.trim() === '' || value.includes(','))).toEqual([]);
  });
});
