import { SecretBox, SecretKeyError } from './secret-box';

const A = { id: 'a', key: Buffer.alloc(32, 1) };
const B = { id: 'b', key: Buffer.alloc(32, 2) };
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const CONTEXT = 'subscription 2f6a1c9e';

describe('SecretBox (AES-256-GCM, key ids, plaintext before a key was set)', () => {
  it('seals with the newest key into enc:v1:<key id>:…, holding nothing of the plaintext, and opens it again', () => {
    const box = new SecretBox([B, A]);
    const sealed = box.seal(SECRET, CONTEXT);
    expect(sealed).toMatch(/^enc:v1:b:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('whsec_');
    expect(sealed).not.toContain(SECRET.slice(6, 20));
    expect(box.open(sealed, CONTEXT)).toBe(SECRET);
    // A fresh IV each time: the same secret never seals to the same value.
    expect(box.seal(SECRET, CONTEXT)).not.toBe(sealed);
  });

  it('opens values sealed with an older key it still holds, and says which are not on the newest', () => {
    const old = new SecretBox([A]).seal(SECRET, CONTEXT);
    const box = new SecretBox([B, A]);
    expect(box.open(old, CONTEXT)).toBe(SECRET);
    expect(box.isCurrent(old)).toBe(false);
    expect(box.isCurrent(box.seal(SECRET, CONTEXT))).toBe(true);
    expect(box.isCurrent(SECRET)).toBe(false);
    expect(SecretBox.keyIdOf(old)).toBe('a');
    expect(SecretBox.keyIdOf(SECRET)).toBeNull();
  });

  it('answers plaintext as it is, and stores plaintext without a key', () => {
    expect(new SecretBox([A]).open(SECRET, CONTEXT)).toBe(SECRET);
    const none = new SecretBox([]);
    expect(none.seal(SECRET, CONTEXT)).toBe(SECRET);
    expect(none.isCurrent(SECRET)).toBe(true);
  });

  it('fails clearly, naming the key id, for a missing key, a wrong key, another row or an altered value', () => {
    const sealed = new SecretBox([A]).seal(SECRET, CONTEXT);
    expect(() => new SecretBox([B]).open(sealed, CONTEXT)).toThrow(
      new SecretKeyError(`the ${CONTEXT} secret is encrypted with key "a", which SECRETS_ENCRYPTION_KEY does not hold`),
    );
    const wrong = new SecretBox([{ id: 'a', key: Buffer.alloc(32, 3) }]);
    expect(() => wrong.open(sealed, CONTEXT)).toThrow(/key "a" of SECRETS_ENCRYPTION_KEY does not decrypt/);
    expect(() => new SecretBox([A]).open(sealed, 'subscription other')).toThrow(SecretKeyError);
    const altered = `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(() => new SecretBox([A]).open(altered, CONTEXT)).toThrow(SecretKeyError);
    expect(() => new SecretBox([A]).open('enc:v1:a:nonsense', CONTEXT)).toThrow(SecretKeyError);
  });
});
