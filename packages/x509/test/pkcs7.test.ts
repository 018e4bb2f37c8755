import * as pkijs from 'pkijs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ControllerPki,
  createControllerPki,
  fingerprint,
  parsePemChain,
  parsePkcs7Certs,
  pkcs7CertsOnly,
  pkcs7CertsOnlyDer,
} from '../src/index.ts';
import { OpenSsl } from './helpers.ts';

let pki: ControllerPki;
const ssl = new OpenSsl();

beforeAll(async () => {
  pki = await createControllerPki({ name: 'EST' });
});
afterAll(() => ssl.cleanup());

describe('pkcs7CertsOnly (/.well-known/est/cacerts body)', () => {
  it('is base64 in 64-character lines joined by \\n with no trailing newline', () => {
    const body = pkcs7CertsOnly([pki.chainPem]);
    expect(body.endsWith('\n')).toBe(false);
    expect(body).not.toContain('\r');
    const lines = body.split('\n');
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines.slice(0, -1)) expect(line).toHaveLength(64);
    const last = lines[lines.length - 1]!;
    expect(last.length).toBeGreaterThan(0);
    expect(last.length).toBeLessThanOrEqual(64);
    expect(lines.join('')).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
    expect(lines.join('').length % 4).toBe(0);
    expect(
      Buffer.from(lines.join(''), 'base64').equals(
        Buffer.from(pkcs7CertsOnlyDer(parsePemChain(pki.chainPem).map((c) => c.der))),
      ),
    ).toBe(true);
  });

  it('decodes with openssl base64 -d + openssl pkcs7 -print_certs (DER) and holds both CA certs', () => {
    const body = pkcs7CertsOnly([pki.intermediate.certPem, pki.root.certPem]);
    const bodyFile = ssl.file('cacerts.b64', body);
    ssl.run(['base64', '-d', '-in', bodyFile, '-out', 'cacerts.der']);
    const printed = ssl.run(['pkcs7', '-inform', 'DER', '-in', 'cacerts.der', '-print_certs']);
    expect(printed).toContain('subject=CN = EST Intermediate CA');
    expect(printed).toContain('subject=CN = EST Root CA');
    const certs = parsePemChain(printed.replace(/^(subject|issuer)=.*$/gm, ''));
    expect(certs.map((c) => c.fingerprint)).toEqual([
      fingerprint(pki.intermediate.certPem),
      fingerprint(pki.root.certPem),
    ]);

    // the same with the coreutils-style decoder (Buffer) to be independent of openssl's base64
    ssl.file('cacerts2.der', Buffer.from(body, 'base64'));
    expect(ssl.run(['pkcs7', '-inform', 'DER', '-in', 'cacerts2.der', '-print_certs'])).toBe(printed);
  });

  it('is the degenerate SignedData shape Go produces (checked with pkijs)', () => {
    const der = Buffer.from(pkcs7CertsOnly([pki.chainPem]), 'base64');
    const ci = pkijs.ContentInfo.fromBER(der);
    expect(ci.contentType).toBe('1.2.840.113549.1.7.2');
    const sd = new pkijs.SignedData({ schema: ci.content });
    expect(sd.version).toBe(1);
    expect(sd.digestAlgorithms).toHaveLength(0);
    expect(sd.signerInfos).toHaveLength(0);
    expect(sd.encapContentInfo.eContentType).toBe('1.2.840.113549.1.7.1');
    expect(sd.encapContentInfo.eContent).toBeUndefined();
    expect(sd.crls).toBeUndefined();
    expect(sd.certificates).toHaveLength(2);
    const embedded = (sd.certificates as pkijs.Certificate[]).map((c) =>
      fingerprint(new Uint8Array(c.toSchema().toBER(false))),
    );
    expect(embedded).toEqual([fingerprint(pki.intermediate.certPem), fingerprint(pki.root.certPem)]);
  });

  it('round-trips through parsePkcs7Certs, keeps order and drops exact duplicates', () => {
    const body = pkcs7CertsOnly([pki.root.certPem, pki.chainPem]);
    const pems = parsePkcs7Certs(body);
    expect(pems.map((p) => fingerprint(p))).toEqual([
      fingerprint(pki.root.certPem),
      fingerprint(pki.intermediate.certPem),
    ]);
    expect(pems[0]).toBe(pki.root.certPem);
  });

  it('encodes an empty set as a valid PKCS#7', () => {
    const body = pkcs7CertsOnly([]);
    ssl.file('empty.der', Buffer.from(body, 'base64'));
    expect(ssl.tryRun(['pkcs7', '-inform', 'DER', '-in', 'empty.der', '-print_certs']).ok).toBe(true);
  });
});
