import { createHmac } from 'node:crypto';
import { isValidPozySignature, matchingPozySecret, signPozyPayload } from './webhook-signature';

describe('Pozy webhook signature', () => {
  const secret = 'whsec_abc';
  const body = Buffer.from('{"id":"3f1c9e52","event":"post.published"}');
  const expected = createHmac('sha256', secret).update(body).digest('hex');

  it('is the lowercase hex HMAC-SHA256 of the raw body', () => {
    expect(signPozyPayload(secret, body)).toBe(expected);
  });

  it('accepts the right signature, in either case', () => {
    expect(isValidPozySignature(secret, body, expected)).toBe(true);
    expect(isValidPozySignature(secret, body, expected.toUpperCase())).toBe(true);
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['prefixed', `sha256=${expected}`],
    ['truncated', expected.slice(0, 63)],
    ['another secret', createHmac('sha256', 'other').update(body).digest('hex')],
    ['another body', createHmac('sha256', secret).update(`${body.toString()} `).digest('hex')],
  ])('rejects a %s signature', (_name, header) => {
    expect(isValidPozySignature(secret, body, header)).toBe(false);
  });

  it('says which of two secrets (a rotation under way) signed the body, and -1 for a third', () => {
    const [previous, next] = ['whsec_previous', 'whsec_next'];
    expect(matchingPozySecret([previous, next], body, signPozyPayload(previous, body))).toBe(0);
    expect(matchingPozySecret([previous, next], body, signPozyPayload(next, body))).toBe(1);
    expect(matchingPozySecret([previous, next], body, signPozyPayload('whsec_third', body))).toBe(-1);
    expect(matchingPozySecret([previous, next], body, undefined)).toBe(-1);
    expect(matchingPozySecret([], body, signPozyPayload(previous, body))).toBe(-1);
  });
});
