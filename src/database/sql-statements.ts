/**
 * Splits a migration script into its statements, for a migration that must run outside a transaction
 * (`CREATE INDEX CONCURRENTLY` refuses to run in one, and a multi-statement query is one). Knows what PostgreSQL's
 * lexer knows of where a `;` does not end a statement: quoted strings (`'…'`, `E'…'` with backslash escapes),
 * quoted identifiers, dollar-quoted bodies (`$$…$$`, `$tag$…$tag$`), line comments and nested block comments.
 * Statements come back trimmed, comments kept, empty ones (only comments or blanks) dropped.
 */
export function splitStatements(script: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let i = 0;
  const n = script.length;
  while (i < n) {
    const c = script[i];
    const next = script[i + 1];
    if (c === '-' && next === '-') {
      const end = script.indexOf('\n', i);
      i = end === -1 ? n : end + 1;
    } else if (c === '/' && next === '*') {
      i = skipBlockComment(script, i);
    } else if (c === "'") {
      i = skipQuoted(script, i, "'", isEscapeString(script, i));
    } else if (c === '"') {
      i = skipQuoted(script, i, '"', false);
    } else if (c === '$') {
      i = skipDollarQuoted(script, i);
    } else if (c === ';') {
      push(statements, script.slice(start, i));
      start = i + 1;
      i += 1;
    } else {
      i += 1;
    }
  }
  push(statements, script.slice(start));
  return statements;
}

function push(statements: string[], text: string): void {
  const statement = text.trim();
  if (withoutComments(statement).trim() !== '') statements.push(statement);
}

/** The text with its comments removed (strings are not looked into: enough to tell an empty statement). */
function withoutComments(text: string): string {
  return text.replace(/--[^\n]*/g, '').replace(/\/\*[\s\S]*?\*\//g, '');
}

/** `E'…'` (or `e'…'`) takes backslash escapes; a standard string does not (standard_conforming_strings, the default). */
function isEscapeString(script: string, quote: number): boolean {
  const before = script[quote - 1];
  return (before === 'E' || before === 'e') && !/[A-Za-z0-9_$]/.test(script[quote - 2] ?? '');
}

function skipQuoted(script: string, open: number, quote: string, backslashEscapes: boolean): number {
  let i = open + 1;
  while (i < script.length) {
    const c = script[i];
    if (backslashEscapes && c === '\\') i += 2;
    else if (c === quote && script[i + 1] === quote) i += 2;
    else if (c === quote) return i + 1;
    else i += 1;
  }
  return script.length;
}

function skipBlockComment(script: string, open: number): number {
  let depth = 0;
  let i = open;
  while (i < script.length) {
    if (script[i] === '/' && script[i + 1] === '*') {
      depth += 1;
      i += 2;
    } else if (script[i] === '*' && script[i + 1] === '/') {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else {
      i += 1;
    }
  }
  return script.length;
}

/** `$tag$…$tag$`; a `$` that opens no such quote (`$1`, a `$` inside an identifier) is an ordinary character. */
function skipDollarQuoted(script: string, open: number): number {
  if (/[A-Za-z0-9_]/.test(script[open - 1] ?? '')) return open + 1;
  const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(script.slice(open, open + 64));
  if (!tag) return open + 1;
  const close = script.indexOf(tag[0], open + tag[0].length);
  return close === -1 ? script.length : close + tag[0].length;
}
