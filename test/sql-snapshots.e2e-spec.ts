import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SQL_SAMPLES } from '../src/database/sql-snapshot';
import { declaredMethods, QUERIES_DIR, render, repositories } from '../tools/sql-snapshots';

// The SQL each repository sends is checked in (src/queries/), so that a changed statement shows in review as SQL.
// `npm run sql:snapshots` writes it; no database is needed.
const FIX = 'run `npm run sql:snapshots` and commit src/queries/';

describe('SQL snapshots', () => {
  it('every method of every repository has a @GenerateSql sample (or says why it sends no statement)', () => {
    const missing = repositories().flatMap(({ owner, source }) =>
      declaredMethods(owner)
        .filter((method) => !SQL_SAMPLES.get(owner)?.has(method))
        .map((method) => `${source}: ${owner.name}.${method}`),
    );
    expect(missing).toEqual([]);
  });

  it(`src/queries/ holds the SQL the code sends (if not: ${FIX})`, async () => {
    const rendered = await render();
    const onDisk = existsSync(QUERIES_DIR) ? readdirSync(QUERIES_DIR).filter((name) => name.endsWith('.sql')) : [];
    expect(onDisk.sort()).toEqual([...rendered.keys()].sort());
    const stale = [...rendered].filter(([name, text]) => readFileSync(join(QUERIES_DIR, name), 'utf8') !== text).map(([name]) => name);
    expect(stale).toEqual([]);
  });
});
