import { Logger } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { AppConfig } from '../config/app-config';
import { ReadTokenRegistry } from './read-token-registry.service';
import { LiveReadToken, ReadTokenFingerprint, ReadTokenRepository } from './read-token.repository';
import { tokenDigest } from './read-token-secret';

const TOKEN_A = 'pzs_token_a';
const TOKEN_B = 'pzs_token_b';

/** The table, as the registry reads it: rows, their counts, and what was asked of it. */
class FakeTable {
  rows: Array<LiveReadToken & { deleted: boolean }> = [];
  failing = false;
  reads = { fingerprint: 0, live: 0 };
  touched: string[][] = [];

  add(id: string, token: string, workspaces: LiveReadToken['workspaces'], lastUsedAt: Date | null = null): LiveReadToken {
    const row = { id, tokenHash: tokenDigest(token), workspaces, lastUsedAt, deleted: false };
    this.rows.push(row);
    return row;
  }

  delete(id: string): void {
    const row = this.rows.find((r) => r.id === id);
    if (row) row.deleted = true;
  }

  repository(): ReadTokenRepository {
    return {
      fingerprint: async (): Promise<ReadTokenFingerprint> => {
        this.reads.fingerprint += 1;
        if (this.failing) throw new Error('connection refused');
        return { total: this.rows.length, deleted: this.rows.filter((r) => r.deleted).length };
      },
      live: async (): Promise<LiveReadToken[]> => {
        this.reads.live += 1;
        return this.rows.filter((r) => !r.deleted).map(({ deleted: _deleted, ...row }) => ({ ...row }));
      },
      touch: async (ids: readonly string[]) => {
        if (this.failing) throw new Error('connection refused');
        this.touched.push([...ids]);
      },
    } as unknown as ReadTokenRepository;
  }
}

const config = (env: Record<string, string> = {}) =>
  AppConfig.fromEnvironment({ POZY_API_KEY: 'sk_test', DATABASE_URL: 'postgresql://localhost/x', ...env });

describe('ReadTokenRegistry', () => {
  let table: FakeTable;
  let registry: ReadTokenRegistry;

  const start = async (env: Record<string, string> = {}) => {
    registry = new ReadTokenRegistry(config(env), table.repository());
    await registry.onApplicationBootstrap();
  };
  /** One poll (a second), its statements included. */
  const poll = () => jest.advanceTimersByTimeAsync(1_000);
  const scopeOf = (token: string) => registry.match(token)?.scope.workspaces;

  beforeEach(() => {
    jest.useFakeTimers();
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    table = new FakeTable();
  });

  afterEach(async () => {
    await registry?.beforeApplicationShutdown();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('holds the live tokens once it has started, by their hashes, with their scopes', async () => {
    table.add('t1', TOKEN_A, ['acme-eu']);
    table.add('t2', TOKEN_B, '*');
    await start();

    expect(registry.anyLive).toBe(true);
    expect(scopeOf(TOKEN_A)).toEqual(['acme-eu']);
    expect(scopeOf(TOKEN_B)).toBe('*');
    expect(registry.match('pzs_other')).toBeUndefined();
    expect(registry.match(tokenDigest(TOKEN_A))).toBeUndefined();
  });

  it('reads the rows again only when the counts change: a poll a second costs one aggregate', async () => {
    table.add('t1', TOKEN_A, ['acme-eu']);
    await start();
    expect(table.reads).toEqual({ fingerprint: 1, live: 1 });

    for (let i = 0; i < 5; i++) await poll();
    expect(table.reads).toEqual({ fingerprint: 6, live: 1 });

    table.add('t2', TOKEN_B, ['beta']);
    await poll();
    expect(table.reads.live).toBe(2);
    expect(scopeOf(TOKEN_B)).toEqual(['beta']);
  });

  it('refuses a token deleted elsewhere after the next poll, and notices a delete and an insert between two polls', async () => {
    table.add('t1', TOKEN_A, ['acme-eu']);
    await start();

    table.delete('t1');
    table.add('t2', TOKEN_B, ['beta']);
    await poll();

    expect(registry.match(TOKEN_A)).toBeUndefined();
    expect(scopeOf(TOKEN_B)).toEqual(['beta']);
  });

  it("holds this replica's own change before the read that confirms it, and even when that read fails", async () => {
    const row = table.add('t1', TOKEN_A, ['acme-eu']);
    await start();

    table.failing = true;
    table.delete('t1');
    await registry.changed({ deleted: 't1' });
    expect(registry.match(TOKEN_A)).toBeUndefined();
    expect(registry.anyLive).toBe(false);

    await registry.changed({ created: { ...row, id: 't9', tokenHash: tokenDigest(TOKEN_B) } });
    expect(scopeOf(TOKEN_B)).toEqual(['acme-eu']);
  });

  it("writes a token's last use at most once a minute, in the background, never in the request", async () => {
    table.add('t1', TOKEN_A, ['acme-eu']);
    table.add('t2', TOKEN_B, '*');
    await start();

    for (let i = 0; i < 100; i++) registry.match(TOKEN_A);
    expect(table.touched).toEqual([]);
    await poll();
    expect(table.touched).toEqual([['t1']]);

    for (let second = 0; second < 58; second++) {
      registry.match(TOKEN_A);
      await poll();
    }
    expect(table.touched).toEqual([['t1']]);

    await jest.advanceTimersByTimeAsync(2_000);
    registry.match(TOKEN_A);
    registry.match(TOKEN_B);
    await poll();
    expect(table.touched).toEqual([['t1'], ['t1', 't2']]);
  });

  it('does not write a use another replica wrote less than a minute ago', async () => {
    table.add('t1', TOKEN_A, ['acme-eu'], new Date(Date.now() - 30_000));
    await start();

    registry.match(TOKEN_A);
    await poll();
    expect(table.touched).toEqual([]);

    await jest.advanceTimersByTimeAsync(30_000);
    registry.match(TOKEN_A);
    await poll();
    expect(table.touched).toEqual([['t1']]);
  });

  it('keeps a use it could not write, and writes it once the database answers', async () => {
    table.add('t1', TOKEN_A, ['acme-eu']);
    await start();
    registry.match(TOKEN_A);
    table.failing = true;
    await poll();
    expect(table.touched).toEqual([]);

    table.failing = false;
    await poll();
    expect(table.touched).toEqual([['t1']]);
  });

  it('answers 503 tokens_unavailable for a made token once it has not read the table for 10 s, and trusts them again after a read', async () => {
    table.add('t1', TOKEN_A, ['acme-eu']);
    await start();
    table.failing = true;

    await jest.advanceTimersByTimeAsync(9_000);
    expect(scopeOf(TOKEN_A)).toEqual(['acme-eu']);

    await jest.advanceTimersByTimeAsync(2_000);
    expect(() => registry.match(TOKEN_A)).toThrow(ApiError);
    const refusal = (() => {
      try {
        registry.match('pzs_other');
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(refusal).toMatchObject({ status: 503, code: 'tokens_unavailable', retryAfterS: 2 });
    // Whether reads are open goes by the last copy.
    expect(registry.anyLive).toBe(true);

    table.failing = false;
    await poll();
    expect(scopeOf(TOKEN_A)).toEqual(['acme-eu']);
  });

  it('says when the first live token closes the reads and when the last one opens them, without API_TOKENS', async () => {
    const said = jest.spyOn(Logger.prototype, 'log');
    const warned = jest.spyOn(Logger.prototype, 'warn');
    await start();

    table.add('t1', TOKEN_A, ['acme-eu']);
    await poll();
    expect(said).toHaveBeenCalledWith(
      expect.stringMatching(/^API_TOKENS is not set, and a token made with POST \/admin\/tokens is live: .* now need a token$/),
    );

    table.delete('t1');
    await poll();
    expect(warned).toHaveBeenCalledWith(expect.stringMatching(/no token made with POST \/admin\/tokens is live any more: .* open to anyone again$/));
  });

  it('reads nothing on ROLE=worker, which serves no reads', async () => {
    await start({ ROLE: 'worker' });
    await poll();
    expect(table.reads).toEqual({ fingerprint: 0, live: 0 });
  });
});
