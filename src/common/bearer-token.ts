import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const digest = (text: string) => createHash('sha256').update(text).digest();

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
  const mine = digest(presented);
  let matched = false;
  for (const token of tokens) matched = timingSafeEqual(mine, digest(token)) || matched;
  return matched;
}
