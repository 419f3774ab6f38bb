import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * The form of a token made with `POST /admin/tokens` (read-tokens/read-token-secret.ts makes them): `pzs_` and the
 * base64url of 32 bytes. Fixed, so that the logs can redact one wherever it shows, unknown as it is to them.
 */
export const MADE_TOKEN_FORM = /pzs_[A-Za-z0-9_-]{43}/;

/** The token of `Authorization: Bearer <token>`; undefined without one (or with another scheme). */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return header?.startsWith('Bearer ') ? header.slice(7) || undefined : undefined;
}

/**
 * Whether `presented` is one of `tokens`, in a time that says nothing about which one or how much of it matched.
 * Digests first: timingSafeEqual needs equal lengths, and comparing digests leaks nothing about the length. Every
 * token is compared, so a match on the first costs what a match on the last does.
 */
export function matchesAnyToken(presented: string, tokens: readonly string[]): boolean {
  return matchesAnyDigest(presented, tokenDigests(tokens));
}

/** The digests matchesAnyDigest compares with: for tokens fixed at start, computed once rather than on every request. */
export const tokenDigests = (tokens: readonly string[]): readonly Buffer[] => tokens.map(digest);

/** matchesAnyToken, against the tokens' digests (tokenDigests). */
export function matchesAnyDigest(presented: string, digests: readonly Buffer[]): boolean {
  const mine = digest(presented);
  let matched = false;
  for (const other of digests) matched = timingSafeEqual(mine, other) || matched;
  return matched;
}
