import { X509Certificate, X509ChainBuilder } from '@peculiar/x509';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ControllerPki,
  createControllerPki,
  fingerprint,
  issueServerCertificate,
  loadSigner,
  parsePemChain,
  type Signer,
} from '../src/index.ts';
import { OpenSsl } from './helpers.ts';

let pki: ControllerPki;
let signer: Signer;
const ssl = new OpenSsl();

beforeAll(async () => {
  pki = await createControllerPki({ name: 'Test Controller' });
  signer = await loadSigner({ certPem: pki.chainPem, keyPem: pki.intermediate.keyPem });
});
afterAll(() => ssl.cleanup());

const YEAR_MS = 365 * 86_400_000;

describe('createControllerPki', () => {
  it('creates a self-signed P-256 root CA with the CA profile', async () => {
    const [root] = parsePemChain(pki.root.certPem);
    expect(root).toBeDefined();
    expect(root!.subject).toBe('CN=Test Controller Root CA');
    expect(root!.isCa).toBe(true);
    expect(root!.pathLength).toBeUndefined();
    expect(root!.selfIssued).toBe(true);
    expect(await root!.x509.isSelfSigned()).toBe(true);
    expect(root!.publicKeyAlgorithm).toBe('EC P-256');
    expect(root!.notAfter.getTime() - root!.notBefore.getTime()).toBeGreaterThan(9.9 * YEAR_MS);
    expect(root!.subjectKeyIdentifier).toBeDefined();
    expect(root!.authorityKeyIdentifier).toBe(root!.subjectKeyIdentifier);
    expect(pki.root.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);

    const text = ssl.text(pki.root.certPem);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE\n/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign\n/);
    expect(text).toContain('X509v3 Subject Key Identifier');
    expect(text).toContain('X509v3 Authority Key Identifier');
    expect(text).toContain('ecdsa-with-SHA256');
    expect(text).toContain('NIST CURVE: P-256');
  });

  it('creates an intermediate signed by the root with pathLen 0 and ~5 years', () => {
    const [inter, root] = parsePemChain(pki.chainPem);
    expect(inter!.subject).toBe('CN=Test Controller Intermediate CA');
    expect(inter!.issuer).toBe(root!.subject);
    expect(inter!.isCa).toBe(true);
    expect(inter!.pathLength).toBe(0);
    expect(inter!.authorityKeyIdentifier).toBe(root!.subjectKeyIdentifier);
    const years = (inter!.notAfter.getTime() - inter!.notBefore.getTime()) / YEAR_MS;
    expect(years).toBeGreaterThan(4.9);
    expect(years).toBeLessThan(5.1);
    expect(inter!.notAfter <= root!.notAfter).toBe(true);

    const text = ssl.text(pki.intermediate.certPem);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE, pathlen:0\n/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign\n/);
    const ok = ssl.tryRun([
      'verify',
      '-CAfile',
      ssl.file('root.pem', pki.root.certPem),
      ssl.file('inter.pem', pki.intermediate.certPem),
    ]);
    expect(ok.out).toContain(': OK');
  });

  it('honours `now` and backdates one minute', async () => {
    const now = new Date('2030-01-15T12:00:00Z');
    const p = await createControllerPki({ name: 'Clock', now });
    const [root] = parsePemChain(p.root.certPem);
    expect(root!.notBefore.toISOString()).toBe('2030-01-15T11:59:00.000Z');
    expect(root!.notAfter.toISOString()).toBe('2040-01-15T12:00:00.000Z');
    await expect(createControllerPki({ name: '  ' })).rejects.toThrow(/name is required/);
  });
});

describe('issueServerCertificate', () => {
  it('issues a server cert whose chain root → intermediate → server verifies (X509ChainBuilder and openssl)', async () => {
    const issued = await issueServerCertificate(signer, {
      commonName: 'ctrl.example.test',
      dnsNames: ['ctrl.example.test', 'localhost'],
      ipAddresses: ['127.0.0.1', '::1', '2001:db8::7'],
      validityDays: 365,
    });
    expect(issued.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const chain = parsePemChain(issued.chainPem);
    expect(chain.map((c) => c.subject)).toEqual(['CN=ctrl.example.test', 'CN=Test Controller Intermediate CA']);
    expect(chain[0]!.pem).toBe(issued.certPem);

    // @peculiar/x509 chain builder
    const leaf = new X509Certificate(issued.certPem);
    const builder = new X509ChainBuilder({
      certificates: [new X509Certificate(pki.intermediate.certPem), new X509Certificate(pki.root.certPem)],
    });
    const built = await builder.build(leaf);
    expect(built.map((c) => c.subject)).toEqual([
      'CN=ctrl.example.test',
      'CN=Test Controller Intermediate CA',
      'CN=Test Controller Root CA',
    ]);

    // openssl as an independent verifier
    const root = ssl.file('root.pem', pki.root.certPem);
    const inter = ssl.file('inter.pem', pki.intermediate.certPem);
    const leafFile = ssl.file('server.pem', issued.certPem);
    expect(ssl.run(['verify', '-CAfile', root, '-untrusted', inter, leafFile])).toContain(`${leafFile}: OK`);
    expect(ssl.run(['verify', '-CAfile', root, '-untrusted', inter, '-purpose', 'sslserver', leafFile])).toContain(
      ': OK',
    );
    expect(ssl.run(['verify', '-CAfile', root, '-untrusted', inter, '-purpose', 'sslclient', leafFile])).toContain(
      ': OK',
    );
    // without the intermediate it must fail
    expect(ssl.tryRun(['verify', '-CAfile', root, leafFile]).ok).toBe(false);

    const text = ssl.text(issued.certPem);
    expect(text).toMatch(/X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication\n/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment\n/);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE\n/);
    expect(text).toContain(
      'DNS:ctrl.example.test, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:0:7',
    );
    expect(text).toContain('Subject: CN=ctrl.example.test');
    expect(text).toContain('Issuer: CN=Test Controller Intermediate CA');

    // the key belongs to the certificate
    const keyFile = ssl.file('server.key', issued.keyPem);
    const pubFromKey = ssl.run(['pkey', '-in', keyFile, '-pubout']);
    const pubFromCert = ssl.run(['x509', '-in', leafFile, '-noout', '-pubkey']);
    expect(pubFromKey).toBe(pubFromCert);
  });

  it('rejects bad input', async () => {
    await expect(issueServerCertificate(signer, { commonName: 'x', validityDays: 0 })).rejects.toThrow(/validityDays/);
    await expect(
      issueServerCertificate(signer, { commonName: 'x', ipAddresses: ['300.1.1.1'], validityDays: 1 }),
    ).rejects.toThrow(/invalid IP/);
    await expect(
      issueServerCertificate(signer, { commonName: 'x', dnsNames: ['bad name'], validityDays: 1 }),
    ).rejects.toThrow(/invalid DNS/);
  });
});

describe('loadSigner', () => {
  it('round-trips the created PKI', async () => {
    expect(signer.certificate.subject).toBe('CN=Test Controller Intermediate CA');
    expect(signer.chain).toHaveLength(2);
    expect(signer.certPem).toBe(pki.intermediate.certPem);
    expect(signer.chainPem).toBe(pki.chainPem);
    expect(signer.issuingChainPem).toBe(pki.intermediate.certPem);
    expect(signer.signingAlgorithm).toEqual({ name: 'ECDSA', hash: 'SHA-256' });
    // the signer alone (no root) works too
    const alone = await loadSigner({ certPem: pki.intermediate.certPem, keyPem: pki.intermediate.keyPem });
    expect(alone.issuingChainPem).toBe(pki.intermediate.certPem);
    // the root can be a signer as well
    const rootSigner = await loadSigner({ certPem: pki.root.certPem, keyPem: pki.root.keyPem });
    expect(rootSigner.issuingChainPem).toBe('');
  });

  it('accepts operator files: SEC1 EC key and an openssl-made P-384 CA', async () => {
    // convert our PKCS#8 key to SEC1 ("EC PRIVATE KEY") like many tools write it
    const sec1 = ssl.run(['ec', '-in', ssl.file('inter.key', pki.intermediate.keyPem)]);
    expect(sec1).toContain('BEGIN EC PRIVATE KEY');
    const s = await loadSigner({ certPem: pki.chainPem, keyPem: sec1 });
    expect(s.certificate.fingerprint).toBe(fingerprint(pki.intermediate.certPem));

    ssl.run(['ecparam', '-name', 'secp384r1', '-genkey', '-noout', '-out', 'p384.key']);
    ssl.run([
      'req',
      '-x509',
      '-new',
      '-key',
      'p384.key',
      '-sha384',
      '-days',
      '30',
      '-subj',
      '/C=US/O=Operator/CN=Operator CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      'p384.pem',
    ]);
    const caPem = ssl.run(['x509', '-in', 'p384.pem']);
    const keyPem = ssl.run(['pkey', '-in', 'p384.key']);
    const opSigner = await loadSigner({ certPem: caPem, keyPem });
    expect(opSigner.signingAlgorithm).toEqual({ name: 'ECDSA', hash: 'SHA-384' });
    const issued = await issueServerCertificate(opSigner, { commonName: 'srv', dnsNames: ['srv'], validityDays: 10 });
    const leafFile = ssl.file('op-leaf.pem', issued.certPem);
    expect(ssl.run(['verify', '-CAfile', ssl.file('op-ca.pem', caPem), leafFile])).toContain(': OK');
    expect(ssl.text(issued.certPem)).toContain('ecdsa-with-SHA384');
    expect(ssl.text(issued.certPem)).toContain('Issuer: CN=Operator CA,O=Operator,C=US');
  });

  it('validates key, CA flag, order and validity', async () => {
    await expect(loadSigner({ certPem: pki.chainPem, keyPem: pki.root.keyPem })).rejects.toThrow(/does not belong/);
    const leaf = await issueServerCertificate(signer, { commonName: 'leaf', validityDays: 1 });
    await expect(loadSigner({ certPem: leaf.chainPem, keyPem: leaf.keyPem })).rejects.toThrow(/is not a CA/);
    await expect(
      loadSigner({ certPem: pki.root.certPem + pki.intermediate.certPem, keyPem: pki.root.keyPem }),
    ).rejects.toThrow(/did not issue/);
    await expect(
      loadSigner({ certPem: pki.chainPem, keyPem: pki.intermediate.keyPem, now: new Date('2100-01-01T00:00:00Z') }),
    ).rejects.toThrow(/not valid now/);
    await expect(loadSigner({ certPem: '', keyPem: pki.intermediate.keyPem })).rejects.toThrow(/no certificate/);
    await expect(loadSigner({ certPem: pki.chainPem, keyPem: 'garbage' })).rejects.toThrow(/could not be read/);
  });

  it('refuses a CA certificate without keyCertSign', async () => {
    ssl.run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'nosign.key']);
    ssl.run([
      'req',
      '-x509',
      '-new',
      '-key',
      'nosign.key',
      '-days',
      '30',
      '-subj',
      '/CN=No Sign',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,digitalSignature',
      '-out',
      'nosign.pem',
    ]);
    await expect(
      loadSigner({ certPem: ssl.run(['x509', '-in', 'nosign.pem']), keyPem: ssl.run(['pkey', '-in', 'nosign.key']) }),
    ).rejects.toThrow(/keyCertSign/);
  });

  it('accepts an RSA PKCS#1 key for an RSA CA and signs with sha256WithRSAEncryption', async () => {
    ssl.run(['genrsa', '-traditional', '-out', 'rsa.key', '2048']);
    ssl.run([
      'req',
      '-x509',
      '-new',
      '-key',
      'rsa.key',
      '-days',
      '30',
      '-subj',
      '/CN=RSA CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
      '-out',
      'rsa.pem',
    ]);
    const keyPem = ssl.run(['rsa', '-in', 'rsa.key', '-traditional']);
    expect(keyPem).toContain('BEGIN RSA PRIVATE KEY');
    const rsa = await loadSigner({ certPem: ssl.run(['x509', '-in', 'rsa.pem']), keyPem });
    const issued = await issueServerCertificate(rsa, { commonName: 'rsa-leaf', validityDays: 1 });
    expect(ssl.text(issued.certPem)).toContain('sha256WithRSAEncryption');
    expect(ssl.run(['verify', '-CAfile', 'rsa.pem', ssl.file('rsa-leaf.pem', issued.certPem)])).toContain(': OK');
  });
});
