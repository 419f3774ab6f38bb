import { readMigrations } from './migrator';
import { MIGRATIONS_DIR } from './database.service';
import { splitStatements } from './sql-statements';

describe('splitStatements', () => {
  it('splits on semicolons and drops what holds only comments or blanks', () => {
    expect(splitStatements('CREATE TABLE a (x int);\n\n-- a comment;\nCREATE INDEX CONCURRENTLY i ON a (x);\n;  ')).toEqual([
      'CREATE TABLE a (x int)',
      '-- a comment;\nCREATE INDEX CONCURRENTLY i ON a (x)',
    ]);
  });

  it('does not split inside strings, identifiers, comments or dollar-quoted bodies', () => {
    const fn = `CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $body$ BEGIN PERFORM 1; RETURN NEW; END $body$`;
    const script = [
      `INSERT INTO t VALUES ('a;b', 'it''s; fine', E'back\\';slash')`,
      `CREATE TABLE "odd;name" (x int)`,
      `/* block; /* nested; */ still; */ SELECT 1`,
      fn,
      `DO $$ BEGIN RAISE NOTICE 'x;y'; END $$`,
      `SELECT $1::int, a$b FROM t`,
    ].join(';\n');
    expect(splitStatements(script)).toEqual([
      `INSERT INTO t VALUES ('a;b', 'it''s; fine', E'back\\';slash')`,
      `CREATE TABLE "odd;name" (x int)`,
      `/* block; /* nested; */ still; */ SELECT 1`,
      fn,
      `DO $$ BEGIN RAISE NOTICE 'x;y'; END $$`,
      `SELECT $1::int, a$b FROM t`,
    ]);
  });

  it('reads a standard string with a backslash as PostgreSQL does (no escape)', () => {
    expect(splitStatements(`SELECT 'a\\'; SELECT 2`)).toEqual([`SELECT 'a\\'`, 'SELECT 2']);
  });

  it('gives back every migration of the repository as statements that join to the same script', () => {
    // A property over real input: splitting never loses or invents text other than the separators and blanks.
    for (const migration of readMigrations(MIGRATIONS_DIR)) {
      const statements = splitStatements(migration.script);
      expect(statements.length).toBeGreaterThan(0);
      const squeeze = (text: string) => text.replace(/[\s;]+/g, '');
      expect(squeeze(statements.join(';'))).toBe(squeeze(migration.script));
    }
  });
});
