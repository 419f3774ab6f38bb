import { createHash, randomBytes } from 'node:crypto';

/** Says what a leaked string is (and lets a secret scanner find it); the rest is the secret. */
export const READ_TOKEN_PREFIX = 'pzs_';
const RANDOM_BYTES = 32;

/** A new read token: `pzs_` and the base64url of 32 random bytes (256 bits; 47 characters in all). */
export function newReadToken(): string {
  return READ_TOKEN_PREFIX + randomBytes(RANDOM_BYTES).toString('base64url');
}

/**
 * What is stored of a token, and what a presented one is looked up by: its SHA-256, in lower-case hex. A salt or a
 * slow hash (bcrypt, scrypt) protects secrets a person chose, which an attacker holding the table can guess; these
 * are 256 random bits we generated, which no one can search, so one fast hash keeps the table useless to a reader of
 * it and the check cheap on every request.
 */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
