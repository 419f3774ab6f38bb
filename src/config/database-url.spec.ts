import { DatabaseUrlError, parseDatabaseUrl, passwordsOf } from './database-url';

describe('parseDatabaseUrl: libpq URLs with one host or several', () => {
  it('keeps a single-host URL as it is, with the fallback session attributes', () => {
    expect(parseDatabaseUrl('postgresql://u:p@db:5432/pozy?sslmode=disable', 'read-write')).toEqual({
      hosts: [{ host: 'db', port: 5432 }],
      connectionStrings: ['postgresql://u:p@db:5432/pozy?sslmode=disable'],
      targetSessionAttrs: 'read-write',
      label: 'db:5432',
    });
  });

  it('makes one connection string per host, in order, without target_session_attrs', () => {
    const endpoint = parseDatabaseUrl(
      'postgres://pozy:s%40cret@h1:5432,h2,[::1]:5433/pozy?target_session_attrs=prefer-standby&sslmode=require',
      'any',
    );
    expect(endpoint.connectionStrings).toEqual([
      'postgres://pozy:s%40cret@h1:5432/pozy?sslmode=require',
      'postgres://pozy:s%40cret@h2/pozy?sslmode=require',
      'postgres://pozy:s%40cret@[::1]:5433/pozy?sslmode=require',
    ]);
    expect(endpoint.targetSessionAttrs).toBe('prefer-standby');
    expect(endpoint.label).toBe('h1:5432,h2,[::1]:5433');
  });

  it('reads the URL pg_autoctl prints, with no user', () => {
    const endpoint = parseDatabaseUrl('postgres://127.0.0.1:6001,127.0.0.1:6002/pozy?target_session_attrs=read-write&sslmode=disable', 'read-write');
    expect(endpoint.connectionStrings).toEqual(['postgres://127.0.0.1:6001/pozy?sslmode=disable', 'postgres://127.0.0.1:6002/pozy?sslmode=disable']);
  });

  it.each([
    ['mysql://db/pozy', 'must be a postgres:// or postgresql:// URL'],
    ['postgresql://db:5432/pozy?target_session_attrs=writable', 'has target_session_attrs=writable'],
    ['postgresql://h1:5432,:5433/pozy', 'has a host entry ":5433"'],
    ['postgresql://h1:99999/pozy', 'has a port out of range'],
  ])('refuses %s, naming the problem', (url, problem) => {
    expect(() => parseDatabaseUrl(url, 'any')).toThrow(DatabaseUrlError);
    expect(() => parseDatabaseUrl(url, 'any')).toThrow(problem);
  });

  it('finds the password of a multi-host URL, for the check against published examples', () => {
    expect(passwordsOf('postgresql://u:p%21ss@h1,h2/db?password=other')).toEqual(['p!ss', 'other']);
    expect(passwordsOf('postgresql://h1,h2/db')).toEqual([]);
  });
});
