import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isSecretField, pemFingerprints, redactState, redacted } from './redaction.domain.ts';

/** A PEM block of `der` under `label`, wrapped at 64 characters as PEM writers do. */
function pem(label: string, der: Buffer): string {
  const body = der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n');
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
}
const sha256 = (der: Buffer) => `sha256:${createHash('sha256').update(der).digest('hex')}`;

describe('secret fields', () => {
  it.each([
    'password',
    'newPassword',
    'passwordHash',
    'hash',
    'salt',
    'secret',
    'client_secret',
    'token',
    'enrollmentToken',
    'jwt',
    'key',
    'privateKey',
    'secretKey',
    'api-key',
    'code',
    'recoveryCodes',
    'totp',
    'PASSWORD',
  ])('%s is a secret', (name) => expect(isSecretField(name)).toBe(true));

  it.each(['name', 'minPasswordLength', 'keyId', 'hashes', 'fingerprint', 'certFingerprint', 'isAdmin', 'tags', 'id'])(
    '%s is not',
    (name) => expect(isSecretField(name)).toBe(false),
  );
});

describe('PEM values', () => {
  it('become the SHA-256 fingerprint of their DER bytes, one per block', () => {
    const a = randomBytes(300);
    const b = randomBytes(200);
    expect(pemFingerprints(pem('CERTIFICATE', a))).toBe(sha256(a));
    expect(pemFingerprints(`${pem('CERTIFICATE', a)}${pem('CERTIFICATE', b)}`)).toBe(`${sha256(a)} ${sha256(b)}`);
  });

  it('with a private key in them are secrets whole', () => {
    const value = `${pem('CERTIFICATE', randomBytes(100))}${pem('EC PRIVATE KEY', randomBytes(64))}`;
    expect(pemFingerprints(value)).toBe(redacted);
    expect(pemFingerprints(pem('PRIVATE KEY', randomBytes(64)))).toBe(redacted);
  });

  it('a broken block is withheld, a plain string left alone', () => {
    expect(pemFingerprints('-----BEGIN CERTIFICATE-----\nMIIB')).toBe(redacted);
    expect(pemFingerprints('just text')).toBeUndefined();
  });
});

describe('redactState', () => {
  it('withholds secrets at any depth, fingerprints certificates, keeps the rest and null secrets', () => {
    const der = randomBytes(120);
    const state = {
      id: 'x1',
      name: 'ca-1',
      certPem: pem('CERTIFICATE', der),
      password: 'hunter2-hunter2',
      token: null,
      data: { nested: { apiKey: 'k-123456', port: 443 }, list: [{ secret: 's' }, 'plain'] },
      tags: { owner: 'ops' },
    };
    expect(redactState(state)).toEqual({
      id: 'x1',
      name: 'ca-1',
      certPem: sha256(der),
      password: redacted,
      token: null,
      data: { nested: { apiKey: redacted, port: 443 }, list: [{ secret: redacted }, 'plain'] },
      tags: { owner: 'ops' },
    });
    expect(JSON.stringify(redactState(state))).not.toContain('hunter2');
  });
});
