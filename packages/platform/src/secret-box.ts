/**
 * SecretBox: authenticated encryption of secrets at rest (CA private keys, TOTP secrets, …) under a
 * key derived from the deployment's configuration secret (`ZITI_SECRET_KEY`).
 *
 * Token format (version 1), all parts base64url without padding, joined by dots:
 *
 *     v1.<nonce: 12 bytes>.<ciphertext ‖ GCM tag (16 bytes)>
 *
 * - Cipher: AES-256-GCM, a fresh random 96-bit nonce per message (random nonces are safe far beyond any
 *   realistic number of secrets encrypted under one key: the collision bound is ~2^32 messages).
 * - Key: HKDF-SHA256(ikm = UTF-8 of the configuration secret, salt = fixed label, info = fixed label) →
 *   32 bytes. The configuration secret must itself be high-entropy (use `SecretBox.generateSecret()`),
 *   which is why a fast KDF (HKDF) and not a password hash is used.
 * - Associated data: the version prefix `v1` is always authenticated; callers can add a `context`
 *   string (e.g. `"ca-key:<id>"`) that must be supplied again to decrypt — this stops a ciphertext from
 *   being moved to another column or row and decrypted there.
 * - Rotation: `previousSecrets` are tried on decrypt after the current one; `encrypt` always uses the
 *   current secret, so re-encrypting everything with `reseal()` completes a rotation.
 *
 * Every decryption failure (wrong key, tampering, truncation, bad format) throws the same
 * `SecretBoxError` with a generic message, so errors do not act as an oracle.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export const SECRET_BOX_MIN_SECRET_LENGTH = 32;

const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const HKDF_SALT = Buffer.from('ziti-edge-controller/secret-box', 'utf8');
const HKDF_INFO = Buffer.from('ziti-edge-controller/secret-box/v1/aes-256-gcm', 'utf8');
const B64URL = /^[A-Za-z0-9_-]*$/;

export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

export interface SecretBoxOptions {
  /** Older configuration secrets still accepted by `decrypt` (key rotation). */
  previousSecrets?: readonly string[];
}

export interface SecretBoxCryptOptions {
  /** Extra authenticated data; the same value must be given to decrypt. */
  context?: string;
}

function deriveKey(secret: string, name: string): Buffer {
  if (typeof secret !== 'string' || secret.length < SECRET_BOX_MIN_SECRET_LENGTH) {
    throw new SecretBoxError(`${name} must be a string of at least ${SECRET_BOX_MIN_SECRET_LENGTH} characters`);
  }
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), HKDF_SALT, HKDF_INFO, KEY_BYTES));
}

function aad(context: string | undefined): Buffer {
  // `v1` alone when no context; otherwise `v1\0<context>` (NUL cannot collide with the bare form).
  return context === undefined ? Buffer.from(VERSION, 'utf8') : Buffer.from(`${VERSION}\0${context}`, 'utf8');
}

export class SecretBox {
  readonly #key: Buffer;
  readonly #previousKeys: readonly Buffer[];

  /** @param secret the configuration secret (`ZITI_SECRET_KEY`), at least 32 characters. */
  constructor(secret: string, options: SecretBoxOptions = {}) {
    this.#key = deriveKey(secret, 'ZITI_SECRET_KEY');
    this.#previousKeys = (options.previousSecrets ?? []).map((s, i) => deriveKey(s, `previous secret #${i + 1}`));
  }

  /** A new configuration secret: base64url of 32 random bytes (43 characters). */
  static generateSecret(): string {
    return randomBytes(32).toString('base64url');
  }

  /** True if `value` looks like a token produced by `encrypt` (format check only, no decryption). */
  static isToken(value: unknown): value is string {
    if (typeof value !== 'string') return false;
    const parts = value.split('.');
    return parts.length === 3 && parts[0] === VERSION && B64URL.test(parts[1] ?? '') && B64URL.test(parts[2] ?? '');
  }

  encrypt(plaintext: string | Uint8Array, options: SecretBoxCryptOptions = {}): string {
    const data = typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : Buffer.from(plaintext);
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(options.context));
    const body = Buffer.concat([cipher.update(data), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${nonce.toString('base64url')}.${body.toString('base64url')}`;
  }

  decrypt(token: string, options: SecretBoxCryptOptions = {}): Buffer {
    const fail = (): never => {
      throw new SecretBoxError('secret box: the token could not be decrypted');
    };
    if (typeof token !== 'string') return fail();
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION) return fail();
    const [, nonceText = '', bodyText = ''] = parts;
    if (!B64URL.test(nonceText) || !B64URL.test(bodyText)) return fail();
    const nonce = Buffer.from(nonceText, 'base64url');
    const body = Buffer.from(bodyText, 'base64url');
    // Reject non-canonical encodings too (trailing bits), so one ciphertext has exactly one token.
    if (nonce.length !== NONCE_BYTES || nonce.toString('base64url') !== nonceText) return fail();
    if (body.length < TAG_BYTES || body.toString('base64url') !== bodyText) return fail();
    const ciphertext = body.subarray(0, body.length - TAG_BYTES);
    const tag = body.subarray(body.length - TAG_BYTES);
    for (const key of [this.#key, ...this.#previousKeys]) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(options.context));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
      } catch {
        // try the next key
      }
    }
    return fail();
  }

  /** `decrypt` as UTF-8 text. */
  decryptString(token: string, options: SecretBoxCryptOptions = {}): string {
    return this.decrypt(token, options).toString('utf8');
  }

  /** Decrypts with any accepted key and encrypts again with the current one (key rotation). */
  reseal(token: string, options: SecretBoxCryptOptions = {}): string {
    const plaintext = this.decrypt(token, options);
    try {
      return this.encrypt(plaintext, options);
    } finally {
      plaintext.fill(0);
    }
  }
}
