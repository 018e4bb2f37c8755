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
    return this.#open(token, options).plaintext;
  }

  /** The plaintext and which key opened it (0: the current one, then the previous ones in order). */
  #open(token: string, options: SecretBoxCryptOptions): { plaintext: Buffer; key: number } {
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
    for (const [index, key] of [this.#key, ...this.#previousKeys].entries()) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(options.context));
        decipher.setAuthTag(tag);
        return { plaintext: Buffer.concat([decipher.update(ciphertext), decipher.final()]), key: index };
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

  /**
   * `reseal` for what a previous key sealed; undefined when the current key sealed it already, so a
   * rotation rewrites only what still needs it and running it again changes nothing.
   */
  resealIfStale(token: string, options: SecretBoxCryptOptions = {}): string | undefined {
    const { plaintext, key } = this.#open(token, options);
    try {
      return key === 0 ? undefined : this.encrypt(plaintext, options);
    } finally {
      plaintext.fill(0);
    }
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

/** One value a `SecretBox` sealed, as a row stores it: its column, the context it was sealed under, the token. */
export interface SealedField {
  name: string;
  context: string;
  token: string;
}

/** A row holding sealed values, named by its key (never by anything secret). */
export interface SealedRecord {
  key: string;
  fields: SealedField[];
}

/** One table's sealed values inside one transaction: read in key order under row locks, written back. */
export interface SealedRecords {
  /** The next `limit` rows after `after` (key order), locked (`for update`) until the transaction ends. */
  lock(after: string | undefined, limit: number): Promise<SealedRecord[]>;
  /** Writes the given re-sealed fields of one row locked by `lock` in the same transaction. */
  write(key: string, fields: Record<string, string>): Promise<void>;
}

export interface ResealCounts {
  /** Rows walked. */
  records: number;
  /** Sealed values walked. */
  values: number;
  /** Values a previous key had sealed, sealed again with the current one (or that would be, in a dry run). */
  resealed: number;
  /** Values the current key had sealed already. */
  current: number;
  /** Values no accepted key opens (left as they are). */
  unreadable: number;
  /** The keys of the rows with unreadable values (at most 20). */
  unreadableKeys: string[];
}

/**
 * Re-seals every value of one table with the box's current key (key rotation): batch after batch
 * in key order, each batch one transaction holding its rows' locks, so a concurrent change of a row
 * waits for (or is waited on by) its batch and nothing is overwritten. Only what a previous key
 * sealed is rewritten, so an interrupted run resumes by running again, and a run that finds nothing
 * to re-seal proves the previous keys can go. A dry run counts without writing.
 */
export async function resealRecords(
  box: Pick<SecretBox, 'resealIfStale'>,
  transaction: <T>(fn: (records: SealedRecords) => Promise<T>) => Promise<T>,
  options: { batchSize?: number; dryRun?: boolean } = {},
): Promise<ResealCounts> {
  const batchSize = options.batchSize ?? 200;
  const counts: ResealCounts = { records: 0, values: 0, resealed: 0, current: 0, unreadable: 0, unreadableKeys: [] };
  let after: string | undefined;
  for (;;) {
    const last = await transaction(async (records) => {
      const page = await records.lock(after, batchSize);
      for (const record of page) {
        counts.records++;
        const fresh: Record<string, string> = {};
        let unreadable = false;
        for (const field of record.fields) {
          counts.values++;
          try {
            const next = box.resealIfStale(field.token, { context: field.context });
            if (next === undefined) counts.current++;
            else {
              counts.resealed++;
              fresh[field.name] = next;
            }
          } catch (err) {
            if (!(err instanceof SecretBoxError)) throw err;
            counts.unreadable++;
            unreadable = true;
          }
        }
        if (unreadable && counts.unreadableKeys.length < 20) counts.unreadableKeys.push(record.key);
        if (!options.dryRun && Object.keys(fresh).length > 0) await records.write(record.key, fresh);
      }
      return page.length < batchSize ? undefined : page[page.length - 1]!.key;
    });
    if (last === undefined) return counts;
    after = last;
  }
}
