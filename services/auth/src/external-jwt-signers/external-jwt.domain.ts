import { type JWTPayload, type KeyInput, decodeJwt, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { type ExternalJwtSigner, defaultClaimsProperty } from './external-jwt-signer.domain.ts';

/** Why an external JWT was refused; logged, never sent (the client sees INVALID_AUTH). */
export type ExtJwtFailure =
  | 'MALFORMED'
  | 'ALGORITHM'
  | 'UNKNOWN_ISSUER'
  | 'NO_KID'
  | 'KID'
  | 'KEYS_UNAVAILABLE'
  | 'SIGNATURE'
  | 'AUDIENCE'
  | 'EXPIRED'
  | 'NOT_YET_VALID'
  | 'CLAIM';

export class ExtJwtRejected extends Error {
  constructor(
    readonly reason: ExtJwtFailure,
    detail: string,
  ) {
    super(`external JWT refused (${reason}): ${detail}`);
    this.name = 'ExtJwtRejected';
  }
}

/** The signer's keys could not be read (JWKS endpoint down, bad JWKS). */
export class SignerKeysUnavailable extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'SignerKeysUnavailable';
  }
}

/** Port: the public keys of signers. */
export interface SignerKeys {
  /** The public key of a certificate signer's `certPem`. */
  certificateKey(signer: ExternalJwtSigner): Promise<KeyInput>;
  /**
   * The key of a JWKS signer for the token's `kid`/`alg`, from a cached JWKS that is fetched
   * again when the kid is unknown (keys rotate); null when the JWKS has no such key.
   */
  jwksKey(signer: ExternalJwtSigner, header: { kid: string; alg: string }): Promise<KeyInput | null>;
}

/** Asymmetric algorithms only: `none` and HMAC (where a public key would become the secret) are refused. */
export const allowedJwtAlgorithms = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

export interface VerifiedExternalJwt {
  signer: ExternalJwtSigner;
  /** The value of the signer's claims property (default `sub`). */
  claim: string;
  expiresAt: Date;
  payload: JWTPayload;
}

/**
 * The six rules of seed §5.1 for a JWT presented as `Authorization: Bearer`:
 * 1. `iss` names an enabled signer (its `issuer`);
 * 2. `aud` equals the signer's audience (when the signer has one);
 * 3. the claims property (default `sub`) holds the identity's id or external id (read here,
 *    matched by the caller, which knows the identities);
 * 4. the signature verifies with the signer's certificate or a key of its JWKS;
 * 5. the header `kid` equals the certificate signer's `kid`, or names a key of the JWKS;
 * 6. the token carries an `exp` that has not passed (and an `nbf`, if any, that has).
 * `findSigner` answers the enabled signer with that issuer (callers may restrict it further).
 */
export async function verifyExternalJwt(
  token: string,
  findSigner: (issuer: string) => Promise<ExternalJwtSigner | null>,
  keys: SignerKeys,
  now: Date,
): Promise<VerifiedExternalJwt> {
  let header: { kid?: unknown; alg?: unknown };
  let unverified: JWTPayload;
  try {
    header = decodeProtectedHeader(token);
    unverified = decodeJwt(token);
  } catch (err) {
    throw new ExtJwtRejected('MALFORMED', (err as Error).message);
  }
  const alg = typeof header.alg === 'string' ? header.alg : '';
  if (!allowedJwtAlgorithms.includes(alg))
    throw new ExtJwtRejected('ALGORITHM', `algorithm ${alg || '(none)'} is not accepted`);
  const issuer = typeof unverified.iss === 'string' ? unverified.iss : '';
  const signer = issuer ? await findSigner(issuer) : null;
  if (!signer || !signer.enabled)
    throw new ExtJwtRejected('UNKNOWN_ISSUER', `no enabled signer has issuer ${JSON.stringify(issuer)}`);
  const kid = typeof header.kid === 'string' ? header.kid : '';
  if (!kid) throw new ExtJwtRejected('NO_KID', 'the token header has no kid');

  let key: KeyInput | null;
  try {
    if (signer.certPem) {
      if (kid !== signer.kid) throw new ExtJwtRejected('KID', `kid ${kid} is not the kid of signer ${signer.id}`);
      key = await keys.certificateKey(signer);
    } else {
      key = await keys.jwksKey(signer, { kid, alg });
      if (!key) throw new ExtJwtRejected('KID', `the JWKS of signer ${signer.id} has no key ${kid}`);
    }
  } catch (err) {
    if (err instanceof ExtJwtRejected) throw err;
    throw new ExtJwtRejected('KEYS_UNAVAILABLE', (err as Error).message);
  }

  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: allowedJwtAlgorithms,
      issuer: signer.issuer,
      ...(signer.audience ? { audience: signer.audience } : {}),
      requiredClaims: ['exp'],
      currentDate: now,
    }));
  } catch (err) {
    throw rejectionOf(err);
  }
  const property = signer.claimsProperty ?? defaultClaimsProperty;
  const claim = payload[property];
  if (typeof claim !== 'string' || claim === '')
    throw new ExtJwtRejected('CLAIM', `claim ${property} is missing or not a string`);
  return { signer, claim, expiresAt: new Date((payload.exp ?? 0) * 1000), payload };
}

function rejectionOf(err: unknown): ExtJwtRejected {
  if (err instanceof errors.JWTExpired) return new ExtJwtRejected('EXPIRED', err.message);
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return new ExtJwtRejected('AUDIENCE', err.message);
    if (err.claim === 'exp') return new ExtJwtRejected('EXPIRED', err.message);
    if (err.claim === 'nbf') return new ExtJwtRejected('NOT_YET_VALID', err.message);
    if (err.claim === 'iss') return new ExtJwtRejected('UNKNOWN_ISSUER', err.message);
    return new ExtJwtRejected('MALFORMED', err.message);
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return new ExtJwtRejected('SIGNATURE', err.message);
  if (err instanceof errors.JOSEAlgNotAllowed) return new ExtJwtRejected('ALGORITHM', err.message);
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid)
    return new ExtJwtRejected('MALFORMED', err.message);
  // A key that cannot verify this algorithm (an EC certificate for an RS256 token): not signed by it.
  return new ExtJwtRejected('SIGNATURE', (err as Error).message);
}
