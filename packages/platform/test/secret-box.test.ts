import { createDecipheriv, hkdfSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SECRET_BOX_MIN_SECRET_LENGTH, SecretBox, SecretBoxError } from '../src/secret-box.ts';

const SECRET = 'a-very-long-configuration-secret-for-tests-0123456789';

function flipChar(text: string, index: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const c = text[index]!;
  const replacement = alphabet[(alphabet.indexOf(c) + 1) % 64]!;
  return text.slice(0, index) + replacement + text.slice(index + 1);
}

function flipBodyByte(token: string, byteIndex: number): string {
  const [v, nonce, body] = token.split('.') as [string, string, string];
  const bytes = Buffer.from(body, 'base64url');
  bytes[byteIndex] = bytes[byteIndex]! ^ 0x01;
  return `${v}.${nonce}.${bytes.toString('base64url')}`;
}

describe('SecretBox', () => {
  it('round-trips strings and bytes', () => {
    const box = new SecretBox(SECRET);
    const token = box.encrypt('hello wörld');
    expect(box.decrypt(token).toString('utf8')).toBe('hello wörld');
    expect(box.decryptString(token)).toBe('hello wörld');

    const bytes = new Uint8Array([0, 1, 2, 255, 254]);
    expect([...box.decrypt(box.encrypt(bytes))]).toEqual([...bytes]);

    expect(box.decrypt(box.encrypt('')).length).toBe(0);
    const big = 'x'.repeat(100_000);
    expect(box.decryptString(box.encrypt(big))).toBe(big);
  });

  it('produces the versioned format with a 96-bit nonce and a fresh nonce each time', () => {
    const box = new SecretBox(SECRET);
    const token = box.encrypt('secret');
    expect(token).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    const [, nonce, body] = token.split('.') as [string, string, string];
    expect(Buffer.from(nonce, 'base64url').length).toBe(12);
    expect(Buffer.from(body, 'base64url').length).toBe('secret'.length + 16);
    expect(SecretBox.isToken(token)).toBe(true);
    expect(SecretBox.isToken('plain')).toBe(false);

    const again = box.encrypt('secret');
    expect(again).not.toBe(token);
    expect(again.split('.')[1]).not.toBe(nonce);
  });

  it('is AES-256-GCM under HKDF-SHA256 of the secret (independent decryption)', () => {
    const token = new SecretBox(SECRET).encrypt('interop');
    const [, nonce, body] = token.split('.') as [string, string, string];
    const raw = Buffer.from(body, 'base64url');
    const key = Buffer.from(
      hkdfSync(
        'sha256',
        Buffer.from(SECRET),
        Buffer.from('ziti-edge-controller/secret-box'),
        Buffer.from('ziti-edge-controller/secret-box/v1/aes-256-gcm'),
        32,
      ),
    );
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64url'));
    d.setAAD(Buffer.from('v1'));
    d.setAuthTag(raw.subarray(raw.length - 16));
    expect(Buffer.concat([d.update(raw.subarray(0, raw.length - 16)), d.final()]).toString()).toBe('interop');
  });

  it('rejects short secrets and generates long random ones', () => {
    expect(() => new SecretBox('short')).toThrow(SecretBoxError);
    expect(() => new SecretBox('x'.repeat(SECRET_BOX_MIN_SECRET_LENGTH - 1))).toThrow(/at least 32/);
    expect(() => new SecretBox('x'.repeat(SECRET_BOX_MIN_SECRET_LENGTH))).not.toThrow();

    const a = SecretBox.generateSecret();
    const b = SecretBox.generateSecret();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a, 'base64url').length).toBe(32);
    expect(a).not.toBe(b);
    expect(() => new SecretBox(a)).not.toThrow();
  });

  it('fails with a wrong key', () => {
    const token = new SecretBox(SECRET).encrypt('secret');
    const other = new SecretBox(SecretBox.generateSecret());
    expect(() => other.decrypt(token)).toThrow(SecretBoxError);
    expect(() => other.decrypt(token)).toThrow('secret box: the token could not be decrypted');
  });

  it('detects tampering with ciphertext, tag, nonce and version', () => {
    const box = new SecretBox(SECRET);
    const token = box.encrypt('a secret of some length');
    const bodyLength = Buffer.from(token.split('.')[2]!, 'base64url').length;

    expect(() => box.decrypt(flipBodyByte(token, 0))).toThrow(SecretBoxError); // ciphertext
    expect(() => box.decrypt(flipBodyByte(token, bodyLength - 1))).toThrow(SecretBoxError); // tag
    expect(() => box.decrypt(flipChar(token, 3))).toThrow(SecretBoxError); // nonce
    expect(() => box.decrypt(`v2${token.slice(2)}`)).toThrow(SecretBoxError);

    const [v, nonce, body] = token.split('.') as [string, string, string];
    const truncated = Buffer.from(body, 'base64url').subarray(0, 10).toString('base64url');
    expect(() => box.decrypt(`${v}.${nonce}.${truncated}`)).toThrow(SecretBoxError);
    expect(() => box.decrypt(`${v}.${nonce}.${body}x`)).toThrow(SecretBoxError);
    expect(() => box.decrypt(`${v}.${nonce}`)).toThrow(SecretBoxError);
    expect(() => box.decrypt(`${token}.extra`)).toThrow(SecretBoxError);
    expect(() => box.decrypt('')).toThrow(SecretBoxError);
    expect(() => box.decrypt('v1.!!!.???')).toThrow(SecretBoxError);
    expect(() => box.decrypt(undefined as unknown as string)).toThrow(SecretBoxError);
    // untouched still decrypts
    expect(box.decryptString(token)).toBe('a secret of some length');
  });

  it('binds the optional context as associated data', () => {
    const box = new SecretBox(SECRET);
    const token = box.encrypt('k', { context: 'ca-key:1' });
    expect(box.decryptString(token, { context: 'ca-key:1' })).toBe('k');
    expect(() => box.decrypt(token, { context: 'ca-key:2' })).toThrow(SecretBoxError);
    expect(() => box.decrypt(token)).toThrow(SecretBoxError);
    expect(() => box.decrypt(box.encrypt('k'), { context: '' })).toThrow(SecretBoxError);
  });

  it('decrypts with previous secrets and reseals under the current one', () => {
    const oldSecret = SecretBox.generateSecret();
    const oldToken = new SecretBox(oldSecret).encrypt('rotate me', { context: 'c' });
    const rotated = new SecretBox(SECRET, { previousSecrets: [oldSecret] });
    expect(rotated.decryptString(oldToken, { context: 'c' })).toBe('rotate me');
    const fresh = rotated.reseal(oldToken, { context: 'c' });
    expect(new SecretBox(SECRET).decryptString(fresh, { context: 'c' })).toBe('rotate me');
    expect(() => new SecretBox(oldSecret).decrypt(fresh, { context: 'c' })).toThrow(SecretBoxError);
    expect(() => new SecretBox(SECRET, { previousSecrets: ['short'] })).toThrow(SecretBoxError);
  });
});
