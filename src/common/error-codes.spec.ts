import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ApiError } from './api-error';
import { describeCodes } from './error-body.dto';
import { ERROR_CODES, ErrorCode } from './error-codes';

const SRC = join(__dirname, '..');

/** The service's own source files (not its specs, not Prisma's generated code). */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

const files = sources().map((path) => ({ path: relative(SRC, path), text: readFileSync(path, 'utf8') }));

describe('ERROR_CODES', () => {
  it('holds every code src/ throws: each ApiError is built from a code of the registry, never from a status', () => {
    const problems: string[] = [];
    let literals = 0;
    for (const { path, text } of files) {
      for (const match of text.matchAll(/new ApiError\(\s*([^,)]*)/g)) {
        const first = match[1].trim();
        const literal = /^'([^']*)'$/.exec(first)?.[1];
        if (literal !== undefined) {
          literals++;
          if (!(literal in ERROR_CODES)) problems.push(`${path}: ${literal} is not in ERROR_CODES`);
        } else if (/^\d/.test(first) || /^["`]/.test(first)) {
          problems.push(`${path}: new ApiError(${first}, ...) does not name a code of the registry`);
        }
      }
    }
    expect(problems).toEqual([]);
    // The walk found the throws (a rename of ApiError would otherwise pass unseen).
    expect(literals).toBeGreaterThan(50);
  });

  it('gives each code one status, the one its ApiError answers with', () => {
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
      expect({ code, status: new ApiError(code, 'x').status }).toEqual({ code, status: ERROR_CODES[code].status });
      expect(ERROR_CODES[code].status).toBeGreaterThanOrEqual(400);
      expect(ERROR_CODES[code].meaning.trim()).not.toBe('');
    }
  });

  it('has no code that src/ neither answers nor documents', () => {
    const unused = Object.keys(ERROR_CODES).filter(
      (code) => !files.some(({ path, text }) => !path.endsWith('error-codes.ts') && new RegExp(`'${code}'|\\b${code}:`).test(text)),
    );
    expect(unused).toEqual([]);
  });

  it("writes the OpenAPI descriptions from the registry's meanings where an endpoint adds none", () => {
    expect(describeCodes({ not_found: 'no post has this id', payload_too_large: true })).toBe(
      `\`not_found\`: no post has this id. \`payload_too_large\`: ${ERROR_CODES.payload_too_large.meaning}.`,
    );
  });
});
