import { createHmac, timingSafeEqual } from 'node:crypto';

// Either case: the digest's bytes are the same (the OpenAPI document of X-Pozy-Signature says so too).
const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;

/** Pozy's signature: lowercase hex HMAC-SHA256 of the exact raw body, keyed with the secret's UTF-8 bytes. */
export function signPozyPayload(secret: string, rawBody: Buffer | string): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex');
}

/** Constant-time check of `X-Pozy-Signature` against the raw body. */
export function isValidPozySignature(secret: string, rawBody: Buffer, header: string | undefined): boolean {
  return matchingPozySecret([secret], rawBody, header) === 0;
}

/**
 * Which of the secrets (two while a rotation is under way) signed the raw body: its index, or -1 for none. Every
 * secret is compared, in constant time, whichever matches, so the time taken does not tell which one did.
 */
export function matchingPozySecret(secrets: readonly string[], rawBody: Buffer, header: string | undefined): number {
  if (typeof header !== 'string' || !HEX_SHA256.test(header)) return -1;
  const given = Buffer.from(header, 'hex');
  let match = -1;
  secrets.forEach((secret, i) => {
    const equal = timingSafeEqual(createHmac('sha256', secret).update(rawBody).digest(), given);
    if (equal && match < 0) match = i;
  });
  return match;
}
