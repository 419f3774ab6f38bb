import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { EncryptionKey } from '../config/environment';

/** Sealed values start with this; a Standard Webhooks secret (`whsec_…`) never does, so plaintext is told apart. */
const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A stored value this process cannot open: its key is not configured, or is not the key that sealed it. */
export class SecretKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyError';
  }
}

/**
 * Secrets at rest: AES-256-GCM under the newest of SECRETS_ENCRYPTION_KEY's keys, stored as
 * `enc:v1:<key id>:<iv>:<tag>:<ciphertext>` (base64url parts) in the column that held the plaintext. The key id lets
 * keys rotate (every configured key opens what it sealed); the context (whose secret it is) is authenticated data,
 * so a value copied onto another row does not open there. Values without the prefix are plaintext, as written
 * before a key was set, and are answered as they are. Without keys, seal() stores plaintext.
 */
export class SecretBox {
  private readonly keys: ReadonlyMap<string, Buffer>;

  constructor(private readonly configured: readonly EncryptionKey[]) {
    this.keys = new Map(configured.map(({ id, key }) => [id, key]));
  }

  /** The key id new values are sealed with; undefined when no key is set (plaintext). */
  get newestKeyId(): string | undefined {
    return this.configured[0]?.id;
  }

  seal(plaintext: string, context: string): string {
    const newest = this.configured[0];
    if (!newest) return plaintext;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', newest.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${PREFIX}${newest.id}:${[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url')).join(':')}`;
  }

  /** The plaintext of a stored value; throws SecretKeyError when its key is missing or wrong. */
  open(stored: string, context: string): string {
    const keyId = SecretBox.keyIdOf(stored);
    if (keyId === null) return stored;
    const key = this.keys.get(keyId);
    if (!key) throw new SecretKeyError(`the ${context} secret is encrypted with key "${keyId}", which SECRETS_ENCRYPTION_KEY does not hold`);
    const parts = stored.slice(PREFIX.length + keyId.length + 1).split(':');
    try {
      if (parts.length !== 3) throw new Error('not iv:tag:ciphertext');
      const [iv, tag, ciphertext] = parts.map((part) => Buffer.from(part, 'base64url'));
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(
        `key "${keyId}" of SECRETS_ENCRYPTION_KEY does not decrypt the ${context} secret: not the key it was encrypted with (or the value was altered)`,
      );
    }
  }

  /** Whether a stored value is sealed with the newest key already (nothing to re-encrypt); plaintext never is while a key is set. */
  isCurrent(stored: string): boolean {
    return SecretBox.keyIdOf(stored) === (this.newestKeyId ?? null);
  }

  /** The id of the key a stored value is sealed with; null for plaintext. */
  static keyIdOf(stored: string): string | null {
    if (!stored.startsWith(PREFIX)) return null;
    const end = stored.indexOf(':', PREFIX.length);
    return end < 0 ? null : stored.slice(PREFIX.length, end);
  }

  /** What sealed values with this key id start with (for SQL that finds them). */
  static prefixOf(keyId: string): string {
    return `${PREFIX}${keyId}:`;
  }

  static readonly SEALED_PREFIX = PREFIX;
}
