import { createHmac, timingSafeEqual } from 'node:crypto';

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/** Pozy's signature: lowercase hex HMAC-SHA256 of the exact raw body, keyed with the secret's UTF-8 bytes. */
export function signPozyPayload(secret: string, rawBody: Buffer | string): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex');
}

/** Constant-time check of `X-Pozy-Signature` against the raw body. */
export function isValidPozySignature(secret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (typeof header !== 'string' || !HEX_SHA256.test(header)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(header, 'hex'));
}
