/**
 * Certificate path validation, modelled on Go's `x509.Certificate.Verify` (which is what the reference
 * controller uses for cert authentication, ottca and CA auto-enrollment):
 *
 * - any certificate in `trustedRoots` is a trust anchor (it need not be self-signed); a leaf that is
 *   itself a trusted anchor verifies on its own;
 * - parents are found by exact issuer/subject name bytes (falling back to the string form), then the
 *   signature decides; intermediates and anchors must be CAs (basicConstraints cA; a version-1
 *   certificate only as anchor) and, when keyUsage is present, carry keyCertSign;
 * - every certificate in the path must be within its validity period at `at`;
 * - pathLenConstraint is enforced (counting intermediates below the CA, like Go);
 * - with `usage`, every certificate in the path that has extKeyUsage must allow it (or anyExtendedKeyUsage);
 *   a certificate without the extension allows everything;
 * - SHA-1/MD5 signatures are rejected (Go ≥ 1.18), the anchor's own signature is not checked;
 * - critical extensions other than keyUsage, basicConstraints, subjectAltName, extKeyUsage and the
 *   certificate-policy family make a certificate unusable. Name constraints are NOT evaluated, so a
 *   critical nameConstraints extension fails the path (documented limitation).
 *
 * Failure → `ChainVerificationError` (an ApiError CERT_FAILED_VALIDATION whose `reason` — also in
 * `cause.code` — says why). Callers remap the code where their endpoint uses another one.
 */
import 'reflect-metadata';
import { ApiError } from '@ziti/contracts';
import { type CertificateInfo, KEY_USAGE, OID, parsePemChain } from './certificates.ts';
import { bytesEqual } from './der.ts';

export type ChainFailureReason =
  | 'MALFORMED'
  | 'NO_TRUSTED_ROOTS'
  | 'EXPIRED'
  | 'NOT_YET_VALID'
  | 'UNKNOWN_AUTHORITY'
  | 'BAD_SIGNATURE'
  | 'INSECURE_ALGORITHM'
  | 'NOT_CA'
  | 'KEY_USAGE'
  | 'PATH_LENGTH'
  | 'INCOMPATIBLE_USAGE'
  | 'UNHANDLED_CRITICAL_EXTENSION'
  | 'TOO_DEEP';

export class ChainVerificationError extends ApiError {
  readonly reason: ChainFailureReason;
  constructor(reason: ChainFailureReason, detail: string) {
    super('CERT_FAILED_VALIDATION', { code: reason, message: detail });
    this.name = 'ChainVerificationError';
    this.reason = reason;
  }
}

export interface VerifyChainOptions {
  /** Validation time (default now). */
  at?: Date;
  /** Required extended key usage of the path; omitted → not checked. */
  usage?: 'clientAuth' | 'serverAuth';
}

export interface VerifiedChain {
  /** Leaf first, trust anchor last. */
  readonly chain: readonly CertificateInfo[];
  /** PEM of each certificate of `chain`. */
  readonly chainPem: readonly string[];
  /** The trust anchor that terminated the path. */
  readonly anchor: CertificateInfo;
  readonly anchorFingerprint: string;
}

const MAX_DEPTH = 10;
const HANDLED_CRITICAL = new Set<string>([
  OID.keyUsage,
  OID.basicConstraints,
  OID.subjectAltName,
  OID.extKeyUsage,
  OID.certificatePolicies,
  OID.policyMappings,
  OID.policyConstraints,
  OID.inhibitAnyPolicy,
]);
const WEAK_HASHES = new Set(['SHA-1', 'MD5', 'MD2', 'MD4']);

function parseAll(pems: readonly string[], what: string): CertificateInfo[] {
  try {
    return pems.flatMap((p) => parsePemChain(p));
  } catch (err) {
    throw new ChainVerificationError('MALFORMED', `${what}: ${(err as Error).message}`);
  }
}

function checkTime(cert: CertificateInfo, at: Date): void {
  if (at < cert.notBefore) {
    throw new ChainVerificationError(
      'NOT_YET_VALID',
      `${cert.subject} is not valid before ${cert.notBefore.toISOString()}`,
    );
  }
  if (at > cert.notAfter) {
    throw new ChainVerificationError('EXPIRED', `${cert.subject} expired at ${cert.notAfter.toISOString()}`);
  }
}

function checkCriticalExtensions(cert: CertificateInfo): void {
  for (const ext of cert.x509.extensions) {
    if (ext.critical && !HANDLED_CRITICAL.has(ext.type)) {
      throw new ChainVerificationError(
        'UNHANDLED_CRITICAL_EXTENSION',
        `${cert.subject} has an unsupported critical extension ${ext.type}`,
      );
    }
  }
}

function namesMatch(child: CertificateInfo, parent: CertificateInfo): boolean {
  return bytesEqual(child.raw.issuer, parent.raw.subject) || child.issuer === parent.subject;
}

async function checkIssuedBy(child: CertificateInfo, parent: CertificateInfo, path: readonly CertificateInfo[]) {
  const hash = (child.x509.signatureAlgorithm as { hash?: { name?: string } }).hash?.name?.toUpperCase();
  if (hash && WEAK_HASHES.has(hash)) {
    throw new ChainVerificationError('INSECURE_ALGORITHM', `${child.subject} is signed with ${hash}`);
  }
  const ok = await child.x509.verify({ publicKey: parent.x509, signatureOnly: true }).catch(() => false);
  if (!ok) {
    throw new ChainVerificationError('BAD_SIGNATURE', `${child.subject} was not signed by ${parent.subject}`);
  }
  // Go: a v3 parent needs basicConstraints with cA; v1 parents are tolerated (only as anchors, see caller).
  if (!parent.isCa && !(parent.version < 3 && !parent.x509.getExtension(OID.basicConstraints))) {
    throw new ChainVerificationError('NOT_CA', `${parent.subject} is not a CA`);
  }
  if (parent.keyUsage !== undefined && (parent.keyUsage & KEY_USAGE.keyCertSign) === 0) {
    throw new ChainVerificationError('KEY_USAGE', `${parent.subject} may not sign certificates (no keyCertSign)`);
  }
  const intermediatesBelow = path.length - 1;
  if (parent.isCa && parent.pathLength !== undefined && intermediatesBelow > parent.pathLength) {
    throw new ChainVerificationError(
      'PATH_LENGTH',
      `${parent.subject} allows ${parent.pathLength} intermediate(s) below it, found ${intermediatesBelow}`,
    );
  }
}

function checkUsage(chain: readonly CertificateInfo[], usage: 'clientAuth' | 'serverAuth'): void {
  const wanted = usage === 'clientAuth' ? OID.clientAuth : OID.serverAuth;
  for (const cert of chain) {
    const eku = cert.extKeyUsage;
    if (eku === undefined || eku.includes(OID.anyExtendedKeyUsage) || eku.includes(wanted)) continue;
    throw new ChainVerificationError('INCOMPATIBLE_USAGE', `${cert.subject} does not allow ${usage}`);
  }
}

/**
 * Verifies `leafPem` (its first certificate is the leaf; further certificates in it are treated as
 * intermediates, as a TLS peer would send them) up to one of `trustedRootsPem`.
 */
export async function verifyChain(
  leafPem: string,
  intermediatesPem: readonly string[],
  trustedRootsPem: readonly string[],
  options: VerifyChainOptions = {},
): Promise<VerifiedChain> {
  const at = options.at ?? new Date();
  const presented = parseAll([leafPem], 'leaf');
  const leaf = presented[0];
  if (!leaf) throw new ChainVerificationError('MALFORMED', 'no leaf certificate');
  const intermediates = [...presented.slice(1), ...parseAll(intermediatesPem, 'intermediates')];
  const anchors = parseAll(trustedRootsPem, 'trusted roots');
  if (anchors.length === 0) throw new ChainVerificationError('NO_TRUSTED_ROOTS', 'no trusted roots given');

  checkTime(leaf, at);
  checkCriticalExtensions(leaf);
  const isAnchor = (c: CertificateInfo) => anchors.some((a) => a.fingerprint === c.fingerprint);

  let lastError: ChainVerificationError | undefined;
  const finish = (path: CertificateInfo[]): VerifiedChain => {
    if (options.usage) checkUsage(path, options.usage);
    const anchor = path[path.length - 1]!;
    return { chain: path, chainPem: path.map((c) => c.pem), anchor, anchorFingerprint: anchor.fingerprint };
  };

  const extend = async (path: CertificateInfo[]): Promise<VerifiedChain | undefined> => {
    const current = path[path.length - 1]!;
    if (path.length > MAX_DEPTH) {
      lastError = new ChainVerificationError('TOO_DEEP', `the chain is longer than ${MAX_DEPTH}`);
      return undefined;
    }
    const seen = new Set(path.map((c) => c.fingerprint));
    // anchors first, then intermediates; inside each, candidates whose SKI matches the AKI first
    const byKeyId = (c: CertificateInfo) =>
      current.authorityKeyIdentifier && c.subjectKeyIdentifier === current.authorityKeyIdentifier ? 0 : 1;
    const candidates = [
      ...anchors.filter((c) => namesMatch(current, c)).sort((a, b) => byKeyId(a) - byKeyId(b)),
      ...intermediates.filter((c) => namesMatch(current, c) && !isAnchor(c)).sort((a, b) => byKeyId(a) - byKeyId(b)),
    ];
    for (const candidate of candidates) {
      if (seen.has(candidate.fingerprint)) continue;
      try {
        await checkIssuedBy(current, candidate, path);
        checkTime(candidate, at);
        const next = [...path, candidate];
        if (isAnchor(candidate)) return finish(next);
        if (!candidate.isCa) throw new ChainVerificationError('NOT_CA', `${candidate.subject} is not a CA`);
        checkCriticalExtensions(candidate);
        const done = await extend(next);
        if (done) return done;
      } catch (err) {
        if (!(err instanceof ChainVerificationError)) throw err;
        lastError = err;
      }
    }
    return undefined;
  };

  if (isAnchor(leaf)) return finish([leaf]);
  const result = await extend([leaf]);
  if (result) return result;
  throw (
    lastError ??
    new ChainVerificationError(
      'UNKNOWN_AUTHORITY',
      `no trusted certificate issued ${leaf.subject} (issuer ${leaf.issuer})`,
    )
  );
}

/** `verifyChain` as a boolean. */
export async function isChainValid(
  leafPem: string,
  intermediatesPem: readonly string[],
  trustedRootsPem: readonly string[],
  options: VerifyChainOptions = {},
): Promise<boolean> {
  try {
    await verifyChain(leafPem, intermediatesPem, trustedRootsPem, options);
    return true;
  } catch (err) {
    if (err instanceof ChainVerificationError) return false;
    throw err;
  }
}
