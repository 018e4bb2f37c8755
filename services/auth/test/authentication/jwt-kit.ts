import 'reflect-metadata';
import type { webcrypto } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import { Pkcs10CertificateRequestGenerator, X509CertificateGenerator } from '@peculiar/x509';
import { type Signer, createControllerPki, loadSigner, signCsr } from '@ziti/x509';
import { type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';

/**
 * Test kit for external JWTs: signing keys, a self-signed certificate for a key, tokens, and a
 * JWKS endpoint on loopback whose keys can rotate and whose fetches are counted.
 */
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

export interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

export async function newSigningKey(kid: string, alg: 'RS256' | 'ES256' = 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicKey, publicJwk };
}

/** A self-signed certificate over the key (certificate signers carry the key in `certPem`). */
export async function certificateFor(key: SigningKey, commonName: string): Promise<string> {
  const signingAlgorithm =
    key.alg === 'ES256' ? { name: 'ECDSA', hash: 'SHA-256' } : { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  const cert = await X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${commonName}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    keys: { privateKey: key.privateKey, publicKey: key.publicKey },
    signingAlgorithm,
  });
  return cert.toString('pem');
}

export interface TokenOptions {
  issuer?: string;
  audience?: string | string[];
  subject?: string;
  /** Seconds from now; negative for an expired token; null for none. */
  expiresIn?: number | null;
  notBefore?: number;
  /** Header kid; null to leave it out; default the key's. */
  kid?: string | null;
  claims?: Record<string, unknown>;
}

export async function signToken(key: SigningKey, options: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ ...(options.claims ?? {}) });
  const kid = options.kid === undefined ? key.kid : options.kid;
  jwt.setProtectedHeader({ alg: key.alg, typ: 'JWT', ...(kid === null ? {} : { kid }) });
  jwt.setIssuedAt(now);
  if (options.issuer) jwt.setIssuer(options.issuer);
  if (options.audience) jwt.setAudience(options.audience);
  if (options.subject) jwt.setSubject(options.subject);
  const expiresIn = options.expiresIn === undefined ? 300 : options.expiresIn;
  if (expiresIn !== null) jwt.setExpirationTime(now + expiresIn);
  if (options.notBefore !== undefined) jwt.setNotBefore(now + options.notBefore);
  return jwt.sign(key.privateKey);
}

/** A JWKS endpoint on 127.0.0.1 serving whatever keys it currently holds. */
export class JwksServer {
  private server?: Server;
  private keys: JWK[] = [];
  fetches = 0;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.fetches++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: this.keys }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    const address = this.server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/jwks.json`;
  }

  serve(...keys: SigningKey[]): void {
    this.keys = keys.map((k) => k.publicJwk);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

// ------------------------------------------------------------------------------------------------
// Client certificates for `method=cert`: a controller-like PKI and leaves issued by it.

export interface TestPki {
  /** Signer chain (intermediate + root) and key, as `ZITI_PKI_SIGNER_*_FILE` take them. */
  chainPem: string;
  keyPem: string;
  /** The CA certificates a verifier trusts (intermediate, root). */
  bundle: string[];
  signer: Signer;
}

/** A two-level PKI created 90 days ago (so certificates can be issued, and expire, in the past). */
export async function newTestPki(name: string): Promise<TestPki> {
  const pki = await createControllerPki({ name, now: new Date(Date.now() - 90 * 86_400_000) });
  const signer = await loadSigner({ certPem: pki.chainPem, keyPem: pki.intermediate.keyPem });
  return {
    chainPem: pki.chainPem,
    keyPem: pki.intermediate.keyPem,
    bundle: [pki.intermediate.certPem, pki.root.certPem],
    signer,
  };
}

export interface ClientCertificate {
  certPem: string;
  keyPem: string;
}

/** A client certificate issued by `pki`; `now` in the past with few `validityDays` makes an expired one. */
export async function issueClientCertificate(
  pki: TestPki,
  commonName: string,
  options: { now?: Date; validityDays?: number } = {},
): Promise<ClientCertificate> {
  const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
    'sign',
    'verify',
  ])) as CryptoKeyPair;
  const csr = await Pkcs10CertificateRequestGenerator.create({
    name: `CN=${commonName}`,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
  });
  const certPem = await signCsr(pki.signer, csr.toString('pem'), {
    kind: 'client',
    validityDays: options.validityDays ?? 30,
    ...(options.now ? { now: options.now } : {}),
  });
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
  return { certPem, keyPem };
}
