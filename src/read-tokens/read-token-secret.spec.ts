import { createHash } from 'node:crypto';
import { MADE_TOKEN_FORM } from '../common/bearer-token';
import { newReadToken, tokenDigest } from './read-token-secret';

describe('read token secrets', () => {
  it('makes `pzs_` and 32 random bytes in base64url, of the one form the logs redact, never twice the same', () => {
    const tokens = Array.from({ length: 200 }, () => newReadToken());
    for (const token of tokens) {
      expect(token).toMatch(/^pzs_[A-Za-z0-9_-]{43}$/);
      expect(new RegExp(`^${MADE_TOKEN_FORM.source}$`).test(token)).toBe(true);
      expect(Buffer.from(token.slice(4), 'base64url')).toHaveLength(32);
    }
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('stores the lower-case hex SHA-256 of the token', () => {
    const token = newReadToken();
    expect(tokenDigest(token)).toBe(createHash('sha256').update(token).digest('hex'));
    expect(tokenDigest(token)).toMatch(/^[0-9a-f]{64}$/);
  });
});
