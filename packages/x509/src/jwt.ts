/**
 * Enrollment JWTs (ZITI-FACTS §8.1, §8.3). Signed with the private key of the controller's edge API TLS
 * server certificate, because clients verify them with the public key of the certificate the issuer
 * presents on TLS (sdk-golang `enroll.ValidateToken` / `FetchServerCert`).
 *
 * Header `{alg, kid, typ}` in that order (golang-jwt marshals a sorted map): alg ES256/ES384/ES512 by curve,
 * RS256 for RSA; kid = lower-case hex SHA-1 of the server certificate DER; typ `JWT`.
 * Claims in the reference's order: iss, sub, aud, exp, jti, em, ctrls. `aud` defaults to `[""]`
 * (pass `null` to omit it, as the CA JWT does), `exp` is omitted when not given, `ctrls` is `null` when
 * not given (Go's nil slice), no iat/nbf.
 */
import 'reflect-metadata';
import { ApiError } from '@ziti/contracts';
import { CompactSign, compactVerify, decodeProtectedHeader, importX509 } from 'jose';
import { type CertificateInfo, parsePemChain } from './certificates.ts';
import { type CryptoKey, describePublicKey, importPrivateKeyPem, keyMatchesCertificate } from './keys.ts';

export type EnrollmentJwtAlgorithm = 'ES256' | 'ES384' | 'ES512' | 'RS256';

export interface EnrollmentJwtClaims {
  /** `https://<edge api address>` (CA JWT: with a trailing slash). */
  iss: string;
  /** identity id / router id / CA id. */
  sub: string;
  /** The enrollment token (UUID v4) or CA id. */
  jti: string;
  /** Enrollment method: ott, ottca, updb, erott, trott, ca. */
  em: string;
  /** Expiry: unix seconds or a Date; omitted when undefined. */
  exp?: number | Date;
  /** Default `[""]`; `null` omits the claim. */
  aud?: string[] | null;
  /** Peer controller addresses; `null`/undefined → `null` (not HA). */
  ctrls?: string[] | null;
}

export interface EnrollmentJwtHeader {
  alg: string;
  kid?: string;
  typ?: string;
  [key: string]: unknown;
}

export interface VerifiedEnrollmentJwt {
  header: EnrollmentJwtHeader;
  claims: Record<string, unknown> & { iss?: string; sub?: string; jti?: string; em?: string; exp?: number };
}

function leafOf(certPem: string): CertificateInfo {
  const leaf = parsePemChain(certPem)[0];
  if (!leaf) throw new Error('no certificate in serverCertPem');
  return leaf;
}

/** JWS algorithm for a certificate's key (ES by curve, RS256 for RSA). */
export function jwtAlgorithmFor(cert: CertificateInfo): EnrollmentJwtAlgorithm {
  const key = describePublicKey(cert.x509.publicKey.algorithm as { name: string });
  if (key?.kind === 'ec') return key.curve === 'P-256' ? 'ES256' : key.curve === 'P-384' ? 'ES384' : 'ES512';
  if (key?.kind === 'rsa') return 'RS256';
  throw new Error(`unsupported key type for enrollment JWTs: ${cert.publicKeyAlgorithm}`);
}

/** Algorithms a verifier accepts for a certificate's key (golang-jwt checks the key type per method). */
function acceptedAlgorithms(cert: CertificateInfo): string[] {
  const key = describePublicKey(cert.x509.publicKey.algorithm as { name: string });
  if (key?.kind === 'ec') return [jwtAlgorithmFor(cert)];
  if (key?.kind === 'rsa') return ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
  return [];
}

interface JwtSigningKey {
  key: CryptoKey;
  alg: EnrollmentJwtAlgorithm;
  kid: string;
}

const signingKeys = new Map<string, Promise<JwtSigningKey>>();
const MAX_CACHED_KEYS = 8;

async function loadSigningKey(serverCertPem: string, serverKeyPem: string): Promise<JwtSigningKey> {
  const cert = leafOf(serverCertPem);
  const alg = jwtAlgorithmFor(cert);
  const imported = await importPrivateKeyPem(serverKeyPem);
  if (!(await keyMatchesCertificate(imported.key, imported.signingAlgorithm, cert.x509))) {
    throw new Error(`the JWT signing key does not belong to the server certificate ${cert.subject}`);
  }
  return { key: imported.key, alg, kid: cert.fingerprint };
}

function signingKeyFor(serverCertPem: string, serverKeyPem: string): Promise<JwtSigningKey> {
  const cacheKey = `${serverCertPem}\u0000${serverKeyPem}`;
  let entry = signingKeys.get(cacheKey);
  if (!entry) {
    entry = loadSigningKey(serverCertPem, serverKeyPem);
    entry.catch(() => signingKeys.delete(cacheKey));
    if (signingKeys.size >= MAX_CACHED_KEYS) signingKeys.delete(signingKeys.keys().next().value as string);
    signingKeys.set(cacheKey, entry);
  }
  return entry;
}

function toUnixSeconds(exp: number | Date): number {
  const seconds = exp instanceof Date ? Math.floor(exp.getTime() / 1000) : exp;
  if (!Number.isSafeInteger(seconds)) throw new Error(`exp must be an integer number of seconds (got ${exp})`);
  return seconds;
}

/** Signs an enrollment JWT with the TLS server certificate's key; returns the compact JWS. */
export async function signEnrollmentJwt(params: {
  serverCertPem: string;
  serverKeyPem: string;
  claims: EnrollmentJwtClaims;
}): Promise<string> {
  const { key, alg, kid } = await signingKeyFor(params.serverCertPem, params.serverKeyPem);
  const c = params.claims;
  const payload: Record<string, unknown> = { iss: c.iss, sub: c.sub };
  if (c.aud !== null) payload.aud = c.aud ?? [''];
  if (c.exp !== undefined) payload.exp = toUnixSeconds(c.exp);
  payload.jti = c.jti;
  payload.em = c.em;
  payload.ctrls = c.ctrls ?? null;
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg, kid, typ: 'JWT' })
    .sign(key);
}

function invalid(message: string): ApiError {
  return new ApiError('INVALID_ENROLLMENT_TOKEN', { code: 'INVALID_ENROLLMENT_TOKEN', message });
}

/**
 * Verifies an enrollment JWT the way the Go SDK does: with the public key of the certificate the issuer
 * presented (`serverCertPem`, first certificate), the algorithm must fit that key, and exp/nbf/iat are
 * checked against `now` when present. `kid` is not consulted (neither does the SDK).
 * Failure → ApiError INVALID_ENROLLMENT_TOKEN with the reason in `cause.message`.
 */
export async function verifyEnrollmentJwt(
  jwt: string,
  serverCertPem: string,
  options: { now?: Date } = {},
): Promise<VerifiedEnrollmentJwt> {
  const token = jwt.trim();
  let header: EnrollmentJwtHeader;
  try {
    header = decodeProtectedHeader(token) as EnrollmentJwtHeader;
  } catch (err) {
    throw invalid(`malformed JWT: ${(err as Error).message}`);
  }
  const cert = leafOf(serverCertPem);
  const alg = typeof header.alg === 'string' ? header.alg : '';
  if (!acceptedAlgorithms(cert).includes(alg)) {
    throw invalid(`algorithm ${alg || '(none)'} does not match the ${cert.publicKeyAlgorithm} certificate key`);
  }

  let payloadBytes: Uint8Array;
  try {
    const key = await importX509(cert.pem, alg);
    ({ payload: payloadBytes } = await compactVerify(token, key, { algorithms: [alg] }));
  } catch (err) {
    throw invalid(`signature verification failed: ${(err as Error).message}`);
  }

  let claims: VerifiedEnrollmentJwt['claims'];
  try {
    claims = JSON.parse(new TextDecoder().decode(payloadBytes));
  } catch {
    throw invalid('the JWT payload is not JSON');
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims))
    throw invalid('the JWT payload is not an object');

  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const time = (name: 'exp' | 'nbf' | 'iat'): number | undefined => {
    const v = claims[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`claim ${name} is not a number`);
    return v;
  };
  const exp = time('exp');
  const nbf = time('nbf');
  const iat = time('iat');
  if (exp !== undefined && now > exp) throw invalid('token is expired');
  if (nbf !== undefined && now < nbf) throw invalid('token is not valid yet');
  if (iat !== undefined && now < iat) throw invalid('token used before issued');
  return { header, claims };
}
