import { createHash } from 'node:crypto';

/** What the trail stores in place of a secret: only that there was one. */
export const redacted = '[redacted]';

/**
 * Words that make a field a secret wherever it appears (any depth) when its name ends with one: a name
 * is split into its words (camelCase, snake_case, kebab-case) and its last word decides — `password`,
 * `passwordHash`, `enrollmentToken`, `recoveryCodes`, `privateKey`, `client_secret`, `totp` are secrets;
 * `minPasswordLength`, `keyId` or a posture check's file `hashes` are settings and facts, and stay.
 */
const secretWords = new Set([
  'password',
  'passwords',
  'passwd',
  'passphrase',
  'pwd',
  'hash',
  'salt',
  'secret',
  'secrets',
  'token',
  'tokens',
  'jwt',
  'key',
  'keys',
  'code',
  'codes',
  'otp',
  'totp',
  'pin',
  'credential',
  'credentials',
  'seed',
]);

/** The words of a field name, lower-cased: `recoveryCodes` → recovery, codes; `private_key` → private, key. */
function wordsOf(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

/**
 * Field names already judged: every state of every change is walked field by field, and the names
 * repeat (a schema's fields). Bounded: names under tags or app data are the callers' own.
 */
const judged = new Map<string, boolean>();
const judgedLimit = 4_096;

/** Whether a field of this name holds a secret (its value is never stored). */
export function isSecretField(name: string): boolean {
  const known = judged.get(name);
  if (known !== undefined) return known;
  const last = wordsOf(name).at(-1);
  const secret = last !== undefined && secretWords.has(last);
  if (judged.size < judgedLimit) judged.set(name, secret);
  return secret;
}

const pemBlock = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/**
 * A string holding PEM blocks as what identifies them: each certificate (or CSR, public key) as the
 * SHA-256 fingerprint of its DER bytes (`sha256:<hex>`), space-separated when there are several; any
 * private key makes the whole value a secret. Undefined when the string holds no PEM block.
 */
export function pemFingerprints(text: string): string | undefined {
  if (!text.includes('-----BEGIN ')) return undefined;
  const prints: string[] = [];
  for (const m of text.matchAll(pemBlock)) {
    if (/PRIVATE KEY/.test(m[1]!)) return redacted;
    const der = Buffer.from(m[2]!.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
    prints.push(`sha256:${createHash('sha256').update(der).digest('hex')}`);
  }
  // A BEGIN line without its END: not a block we can fingerprint, and maybe key material.
  return prints.length > 0 ? prints.join(' ') : redacted;
}

/**
 * A value as the trail may store it: every field named like a secret replaced by `[redacted]` (null
 * stays null: that there was none is no secret), every PEM string by its fingerprints, at any depth.
 */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return pemFingerprints(value) ?? value;
  if (Array.isArray(value)) return value.map(redactValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactField(k, v);
    return out;
  }
  return value;
}

/** One field's value as the trail may store it (see `redactValue`). */
export function redactField(name: string, value: unknown): unknown {
  if (isSecretField(name)) return value === null || value === undefined ? null : redacted;
  return redactValue(value);
}

/** A whole entity state as the trail may store and publish it. */
export function redactState(state: Record<string, unknown>): Record<string, unknown> {
  return redactValue(state) as Record<string, unknown>;
}
