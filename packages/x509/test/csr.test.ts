import { ApiError, type GenericCause } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesEqual, decodePem, encodePem, readChildren, readDer } from '../src/der.ts';
import {
  type ControllerPki,
  createControllerPki,
  fingerprint,
  loadSigner,
  parseCsr,
  parsePemChain,
  type Signer,
  signCsr,
} from '../src/index.ts';
import { makeCsr, OpenSsl } from './helpers.ts';

let pki: ControllerPki;
let signer: Signer;
const ssl = new OpenSsl();
let rootFile: string;
let interFile: string;

beforeAll(async () => {
  pki = await createControllerPki({ name: 'CSR Test' });
  signer = await loadSigner({ certPem: pki.chainPem, keyPem: pki.intermediate.keyPem });
  rootFile = ssl.file('root.pem', pki.root.certPem);
  interFile = ssl.file('inter.pem', pki.intermediate.certPem);
});
afterAll(() => ssl.cleanup());

function csrSubjectDer(csrPem: string): Uint8Array {
  const [block] = decodePem(csrPem);
  const info = readChildren(readDer(block!.der))[0]!;
  return readChildren(info)[1]!.raw;
}

async function expectCsrError(promise: Promise<unknown>, message?: RegExp): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe('COULD_NOT_PROCESS_CSR');
  if (message) expect(((err as ApiError).cause as GenericCause | undefined)?.message).toMatch(message);
}

const now = new Date(Math.floor(Date.now() / 1000) * 1000);

describe('signCsr kind=client', () => {
  it('signs a webcrypto CSR into a client certificate (§8.2 profile)', async () => {
    const csr = await makeCsr({
      name: 'C=US, O=NetFoundry, CN=identity-1',
      sans: [
        { type: 'dns', value: 'ignored.example' },
        { type: 'ip', value: '10.1.2.3' },
      ],
    });
    const certPem = await signCsr(signer, csr.pem, { kind: 'client', validityDays: 365, now });
    expect(certPem).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----\n$/);

    const [cert] = parsePemChain(certPem);
    expect(cert!.subject).toBe('C=US, O=NetFoundry, CN=identity-1');
    expect(cert!.commonName).toBe('identity-1');
    expect(cert!.issuer).toBe('CN=CSR Test Intermediate CA');
    expect(cert!.isCa).toBe(false);
    expect(cert!.notBefore.getTime()).toBe(now.getTime() - 60_000);
    expect(cert!.notAfter.getTime()).toBe(now.getTime() + 365 * 86_400_000);
    expect(cert!.sans.dnsNames).toEqual([]); // client certificates do not carry the requested SANs
    expect(cert!.sans.ipAddresses).toEqual([]);
    // subject copied byte for byte, issuer equals the signer's subject byte for byte
    expect(bytesEqual(cert!.raw.subject, csrSubjectDer(csr.pem))).toBe(true);
    expect(bytesEqual(cert!.raw.issuer, signer.certificate.raw.subject)).toBe(true);
    // serial: positive, at least 64 bits
    expect(cert!.serialNumber).toMatch(/^[0-7][0-9a-f]+$/);
    expect(BigInt(`0x${cert!.serialNumber}`) >= 1n << 64n).toBe(true);

    const text = ssl.text(certPem);
    expect(text).toContain('Subject: CN=identity-1,O=NetFoundry,C=US');
    expect(text).toContain('Issuer: CN=CSR Test Intermediate CA');
    expect(text).toMatch(/X509v3 Extended Key Usage:\s+TLS Web Client Authentication\n/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment, Data Encipherment\n/);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE\n/);
    expect(text).not.toContain('Subject Alternative Name');
    expect(text).toContain('X509v3 Authority Key Identifier');

    const leafFile = ssl.file('client.pem', certPem);
    expect(
      ssl.run(['verify', '-CAfile', rootFile, '-untrusted', interFile, '-purpose', 'sslclient', leafFile]),
    ).toContain(': OK');
    expect(
      ssl.tryRun(['verify', '-CAfile', rootFile, '-untrusted', interFile, '-purpose', 'sslserver', leafFile]).ok,
    ).toBe(false);

    // the certified key is the CSR's key
    const spki = Buffer.from(await crypto.subtle.exportKey('spki', csr.keys.publicKey));
    expect(ssl.run(['x509', '-in', leafFile, '-noout', '-pubkey'])).toBe(encodePem('PUBLIC KEY', spki));

    // serials differ between certificates
    const again = await signCsr(signer, csr.pem, { kind: 'client', validityDays: 365, now });
    expect(parsePemChain(again)[0]!.serialNumber).not.toBe(cert!.serialNumber);
    expect(fingerprint(again)).not.toBe(fingerprint(certPem));
  });

  it('parses the CSR: subject, CN, requested SANs, key algorithm', async () => {
    const csr = await makeCsr({ name: 'CN=router-7', sans: [{ type: 'dns', value: 'r7.example' }] });
    const info = await parseCsr(csr.pem);
    expect(info.commonName).toBe('router-7');
    expect(info.subject).toBe('CN=router-7');
    expect(info.sans.dnsNames).toEqual(['r7.example']);
    expect(info.publicKeyAlgorithm).toBe('EC P-256');
    const der = decodePem(csr.pem)[0]!.der;
    expect((await parseCsr(der)).commonName).toBe('router-7');
  });
});

describe('signCsr kind=server', () => {
  it('copies DNS/IP/email/URI SANs and sets serverAuth (+clientAuth)', async () => {
    const csr = await makeCsr({
      name: 'CN=er-1',
      sans: [
        { type: 'dns', value: 'er1.example.test' },
        { type: 'dns', value: 'localhost' },
        { type: 'ip', value: '192.168.7.9' },
        { type: 'ip', value: '2001:db8::1' },
        { type: 'email', value: 'ops@example.test' },
        { type: 'url', value: 'spiffe://example.test/er-1' },
      ],
    });
    const certPem = await signCsr(signer, csr.pem, { kind: 'server', validityDays: 365, now });
    const [cert] = parsePemChain(certPem);
    expect(cert!.sans).toEqual({
      dnsNames: ['er1.example.test', 'localhost'],
      ipAddresses: ['192.168.7.9', '2001:db8::1'],
      emailAddresses: ['ops@example.test'],
      uris: ['spiffe://example.test/er-1'],
    });
    const text = ssl.text(certPem);
    expect(text).toMatch(/X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication\n/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment, Data Encipherment\n/);
    expect(text).toMatch(/X509v3 Subject Alternative Name:\s*\n/);
    for (const s of [
      'DNS:er1.example.test',
      'DNS:localhost',
      'IP Address:192.168.7.9',
      'IP Address:2001:DB8:0:0:0:0:0:1',
      'email:ops@example.test',
      'URI:spiffe://example.test/er-1',
    ]) {
      expect(text).toContain(s);
    }
    const leafFile = ssl.file('server.pem', certPem);
    expect(
      ssl.run([
        'verify',
        '-CAfile',
        rootFile,
        '-untrusted',
        interFile,
        '-purpose',
        'sslserver',
        '-verify_hostname',
        'er1.example.test',
        leafFile,
      ]),
    ).toContain(': OK');
    expect(
      ssl.run(['verify', '-CAfile', rootFile, '-untrusted', interFile, '-verify_ip', '192.168.7.9', leafFile]),
    ).toContain(': OK');
  });

  it('marks the SAN critical when the subject is empty', async () => {
    ssl.run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'empty.key']);
    const csrPem = ssl.run([
      'req',
      '-new',
      '-key',
      'empty.key',
      '-subj',
      '/',
      '-addext',
      'subjectAltName=DNS:nosubject.test',
    ]);
    const certPem = await signCsr(signer, csrPem, { kind: 'server', validityDays: 30 });
    expect(ssl.text(certPem)).toMatch(/X509v3 Subject Alternative Name: critical\s+DNS:nosubject.test/);
  });
});

describe('CSRs from other tools', () => {
  it('accepts openssl P-384 (like the Go SDK), RSA 2048 and Ed25519 CSRs', async () => {
    ssl.run(['ecparam', '-name', 'secp384r1', '-genkey', '-noout', '-out', 'p384.key']);
    const p384 = ssl.run(['req', '-new', '-key', 'p384.key', '-sha384', '-subj', '/C=US/O=NetFoundry/CN=host-384']);
    const c1 = await signCsr(signer, p384, { kind: 'client', validityDays: 365 });
    expect(ssl.text(c1)).toContain('NIST CURVE: P-384');
    expect(parsePemChain(c1)[0]!.subject).toBe('C=US, O=NetFoundry, CN=host-384');

    ssl.run(['genrsa', '-out', 'rsa.key', '2048']);
    const rsa = ssl.run(['req', '-new', '-key', 'rsa.key', '-subj', '/CN=rsa-client']);
    expect(ssl.text(await signCsr(signer, rsa, { kind: 'client', validityDays: 1 }))).toContain(
      'Public-Key: (2048 bit)',
    );

    ssl.run(['genpkey', '-algorithm', 'ed25519', '-out', 'ed.key']);
    const ed = ssl.run(['req', '-new', '-key', 'ed.key', '-subj', '/CN=ed-client']);
    expect(ssl.text(await signCsr(signer, ed, { kind: 'client', validityDays: 1 }))).toContain('ED25519');
  });

  it('skips SAN forms it does not copy (otherName) and keeps the rest', async () => {
    const csrPem = ssl.run([
      'req',
      '-new',
      '-key',
      'p384.key',
      '-subj',
      '/CN=other',
      '-addext',
      'subjectAltName=otherName:1.3.6.1.4.1.311.20.2.3;UTF8:user@corp.test,DNS:other.test,IP:10.9.8.7',
    ]);
    const certPem = await signCsr(signer, csrPem, { kind: 'server', validityDays: 1 });
    const text = ssl.text(certPem);
    expect(text).toContain('DNS:other.test, IP Address:10.9.8.7');
    expect(text).not.toContain('othername');
  });

  it('rejects RSA keys below 2048 bits', async () => {
    ssl.run(['genrsa', '-out', 'rsa1024.key', '1024']);
    const weak = ssl.run(['req', '-new', '-key', 'rsa1024.key', '-subj', '/CN=weak']);
    await expectCsrError(signCsr(signer, weak, { kind: 'client', validityDays: 1 }), /2048/);
  });
});

describe('bad CSRs → COULD_NOT_PROCESS_CSR', () => {
  it('rejects a CSR whose signature does not match (tampered subject)', async () => {
    const csr = await makeCsr({ name: 'CN=aaaaaaaa' });
    const der = Buffer.from(decodePem(csr.pem)[0]!.der);
    const idx = der.indexOf(Buffer.from('aaaaaaaa'));
    expect(idx).toBeGreaterThan(0);
    der[idx] = 'b'.charCodeAt(0);
    const tampered = encodePem('CERTIFICATE REQUEST', der);
    await expectCsrError(signCsr(signer, tampered, { kind: 'client', validityDays: 1 }), /signature/);
  });

  it('rejects a CSR with a tampered signature value', async () => {
    const csr = await makeCsr({ name: 'CN=sig' });
    const der = Buffer.from(decodePem(csr.pem)[0]!.der);
    der[der.length - 5] = der[der.length - 5]! ^ 0x01;
    await expectCsrError(signCsr(signer, encodePem('CERTIFICATE REQUEST', der), { kind: 'client', validityDays: 1 }));
  });

  it('rejects unparsable input', async () => {
    const opts = { kind: 'client', validityDays: 1 } as const;
    await expectCsrError(signCsr(signer, '', opts));
    await expectCsrError(signCsr(signer, 'not a csr', opts));
    await expectCsrError(
      signCsr(signer, '-----BEGIN CERTIFICATE REQUEST-----\n@@@@\n-----END CERTIFICATE REQUEST-----\n', opts),
    );
    await expectCsrError(signCsr(signer, encodePem('CERTIFICATE REQUEST', Uint8Array.of(0x30, 0x03, 1, 2, 3)), opts));
    await expectCsrError(signCsr(signer, pki.root.certPem, opts), /CERTIFICATE REQUEST/);
    const csr = await makeCsr({ name: 'CN=two' });
    await expectCsrError(signCsr(signer, csr.pem + csr.pem, opts), /unexpected PEM blocks/);
    await expectCsrError(signCsr(signer, 'x'.repeat(70_000), opts), /too large/);
  });

  it('rejects unsupported key types (secp256k1)', async () => {
    ssl.run(['ecparam', '-name', 'secp256k1', '-genkey', '-noout', '-out', 'k1.key']);
    const k1 = ssl.run(['req', '-new', '-key', 'k1.key', '-subj', '/CN=k1']);
    await expectCsrError(signCsr(signer, k1, { kind: 'client', validityDays: 1 }));
  });

  it('maps every truncation or corruption of a valid CSR to COULD_NOT_PROCESS_CSR', async () => {
    const csr = await makeCsr({ name: 'CN=fuzz', sans: [{ type: 'dns', value: 'fuzz.test' }] });
    const der = decodePem(csr.pem)[0]!.der;
    for (let cut = 1; cut < der.length; cut += 7) {
      await expectCsrError(parseCsr(der.subarray(0, cut)));
    }
    for (let i = 0; i < der.length; i += 5) {
      const bad = Uint8Array.from(der);
      bad[i] = bad[i]! ^ 0x40;
      const result = await parseCsr(bad).then(
        () => 'accepted',
        (e: unknown) => (e instanceof ApiError ? e.code : `unexpected ${String(e)}`),
      );
      expect([`COULD_NOT_PROCESS_CSR`]).toContain(result);
    }
  });

  it('validates options', async () => {
    const csr = await makeCsr({ name: 'CN=opts' });
    await expect(signCsr(signer, csr.pem, { kind: 'client', validityDays: -1 })).rejects.toThrow(/validityDays/);
    await expect(signCsr(signer, csr.pem, { kind: 'bogus' as 'client', validityDays: 1 })).rejects.toThrow(/kind/);
  });
});

describe('validity', () => {
  it('never outlives the signing CA', async () => {
    ssl.run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'short.key']);
    ssl.run([
      'req',
      '-x509',
      '-new',
      '-key',
      'short.key',
      '-days',
      '10',
      '-subj',
      '/CN=Short CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
      '-out',
      'short.pem',
    ]);
    const caPem = ssl.run(['x509', '-in', 'short.pem']);
    const short = await loadSigner({ certPem: caPem, keyPem: ssl.run(['pkey', '-in', 'short.key']) });
    const csr = await makeCsr({ name: 'CN=long' });
    const cert = parsePemChain(await signCsr(short, csr.pem, { kind: 'client', validityDays: 365 }))[0]!;
    expect(cert.notAfter.getTime()).toBe(short.certificate.notAfter.getTime());
  });
});
