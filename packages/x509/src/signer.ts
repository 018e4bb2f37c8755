/**
 * The controller's certificate authority: creating a root + intermediate, loading an operator-supplied
 * signer, and the low-level "build and sign one certificate" routine used by every issuing path.
 */
import 'reflect-metadata';
import {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  type Extension,
  KeyUsagesExtension,
  Name,
  type PublicKey,
  SubjectKeyIdentifierExtension,
  X509CertificateGenerator,
} from '@peculiar/x509';
import { type CertificateInfo, certificateFromDer, KEY_USAGE, parsePemChain } from './certificates.ts';
import { bytesEqual, toHex } from './der.ts';
import {
  type CryptoKey,
  exportPkcs8Pem,
  GENERATED_KEY_ALGORITHM,
  generateKeyPair,
  importPrivateKeyPem,
  keyMatchesCertificate,
  type SigningAlgorithm,
  signingAlgorithmFor,
} from './keys.ts';

/** A certificate and its private key, both PEM (key: PKCS#8). */
export interface PemKeyPair {
  certPem: string;
  keyPem: string;
}

export interface ControllerPki {
  /** Self-signed root CA (~10 years). */
  root: PemKeyPair;
  /** Intermediate signing CA (~5 years, pathLen 0) — the one that signs enrollment certificates. */
  intermediate: PemKeyPair;
  /** intermediate + root PEM: what `loadSigner({ certPem })` expects together with `intermediate.keyPem`. */
  chainPem: string;
}

/**
 * An issuing CA ready to sign. Obtain with `loadSigner` (from PEM files) or from `createControllerPki`
 * output via `loadSigner`.
 */
export interface Signer {
  /** The signing CA certificate. */
  readonly certificate: CertificateInfo;
  /** Every certificate supplied, signing CA first (may include the root). */
  readonly chain: readonly CertificateInfo[];
  /** PEM of the signing CA certificate. */
  readonly certPem: string;
  /** PEM of every supplied certificate, signing CA first. */
  readonly chainPem: string;
  /** PEM of the supplied certificates minus self-issued roots: appended after a leaf ("leaf + intermediates"). */
  readonly issuingChainPem: string;
  readonly privateKey: CryptoKey;
  readonly signingAlgorithm: SigningAlgorithm;
}

export const ROOT_CA_VALIDITY_YEARS = 10;
export const INTERMEDIATE_CA_VALIDITY_YEARS = 5;
/** Certificates start one minute in the past to tolerate clock skew (as the reference does). */
export const BACKDATE_MS = 60_000;

const DAY_MS = 86_400_000;

function addYears(date: Date, years: number): Date {
  const d = new Date(date.getTime());
  d.setUTCFullYear(d.getUTCFullYear() + years);
  return d;
}

export function addDays(date: Date, days: number): Date {
  return new Date(date.getTime() + days * DAY_MS);
}

/** A random positive serial number: 16 bytes, high bit clear, first byte non-zero (≈127 bits). */
export function randomSerialHex(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f || 0x01;
  return toHex(bytes);
}

/** A subject with a single CN (PrintableString when possible, else UTF8String — like Go). */
export function commonNameSubject(commonName: string): Name {
  return new Name([{ CN: [commonName] }]);
}

interface BuildParams {
  subject: Name;
  publicKey: CryptoKey | PublicKey;
  notBefore: Date;
  notAfter: Date;
  extensions: Extension[];
  issuer?: { subject: Name; rawSubject: Uint8Array; keyId: string | undefined; publicKey: PublicKey };
  signingKey: CryptoKey;
  signingAlgorithm: SigningAlgorithm;
}

/** Builds and signs one certificate; adds SKI (and AKI when there is an issuer). */
async function buildCertificate(p: BuildParams): Promise<CertificateInfo> {
  const ski = await SubjectKeyIdentifierExtension.create(p.publicKey);
  const aki = p.issuer
    ? p.issuer.keyId
      ? new AuthorityKeyIdentifierExtension(p.issuer.keyId)
      : await AuthorityKeyIdentifierExtension.create(p.issuer.publicKey)
    : new AuthorityKeyIdentifierExtension(ski.keyId);
  const cert = await X509CertificateGenerator.create({
    serialNumber: randomSerialHex(),
    subject: p.subject,
    issuer: p.issuer ? p.issuer.subject : p.subject,
    notBefore: p.notBefore,
    notAfter: p.notAfter,
    publicKey: p.publicKey,
    signingKey: p.signingKey,
    signingAlgorithm: p.signingAlgorithm,
    extensions: [...p.extensions, ski, aki],
  });
  const info = certificateFromDer(new Uint8Array(cert.rawData));
  // Chain building in Go compares name bytes; make sure the issuer was carried over byte-exact.
  if (p.issuer && !bytesEqual(info.raw.issuer, p.issuer.rawSubject)) {
    throw new Error('the issuer name could not be reproduced byte-exact from the signing certificate');
  }
  return info;
}

/** Signs a certificate for `publicKey` with the signer (used by CSR signing and server issuance). */
export async function issueWithSigner(
  signer: Signer,
  params: { subject: Name; publicKey: CryptoKey | PublicKey; notBefore: Date; notAfter: Date; extensions: Extension[] },
): Promise<CertificateInfo> {
  const issuer = signer.certificate;
  return buildCertificate({
    ...params,
    // Never outlive the issuing CA: a longer certificate would fail verification anyway.
    notAfter: new Date(Math.min(params.notAfter.getTime(), issuer.notAfter.getTime())),
    issuer: {
      subject: issuer.x509.subjectName,
      rawSubject: issuer.raw.subject,
      keyId: issuer.subjectKeyIdentifier,
      publicKey: issuer.x509.publicKey,
    },
    signingKey: signer.privateKey,
    signingAlgorithm: signer.signingAlgorithm,
  });
}

/**
 * Creates a fresh two-level PKI: a self-signed root (~10 years) and an intermediate signer CA (~5 years,
 * pathLen 0) signed by it. Keys are ECDSA P-256 (see keys.ts for why). `name` goes into the CNs:
 * `<name> Root CA` and `<name> Intermediate CA`.
 */
export async function createControllerPki(options: { name: string; now?: Date }): Promise<ControllerPki> {
  const name = options.name.trim();
  if (!name) throw new Error('createControllerPki: name is required');
  const now = options.now ?? new Date();
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const caUsage = KEY_USAGE.keyCertSign | KEY_USAGE.cRLSign;
  const signingAlgorithm = signingAlgorithmFor({ kind: 'ec', curve: GENERATED_KEY_ALGORITHM.namedCurve });

  const rootKeys = await generateKeyPair();
  const rootSubject = commonNameSubject(`${name} Root CA`);
  const root = await buildCertificate({
    subject: rootSubject,
    publicKey: rootKeys.publicKey,
    notBefore,
    notAfter: addYears(now, ROOT_CA_VALIDITY_YEARS),
    extensions: [new BasicConstraintsExtension(true, undefined, true), new KeyUsagesExtension(caUsage, true)],
    signingKey: rootKeys.privateKey,
    signingAlgorithm,
  });

  const intermediateKeys = await generateKeyPair();
  const intermediate = await buildCertificate({
    subject: commonNameSubject(`${name} Intermediate CA`),
    publicKey: intermediateKeys.publicKey,
    notBefore,
    notAfter: addYears(now, INTERMEDIATE_CA_VALIDITY_YEARS),
    extensions: [new BasicConstraintsExtension(true, 0, true), new KeyUsagesExtension(caUsage, true)],
    issuer: {
      subject: root.x509.subjectName,
      rawSubject: root.raw.subject,
      keyId: root.subjectKeyIdentifier,
      publicKey: root.x509.publicKey,
    },
    signingKey: rootKeys.privateKey,
    signingAlgorithm,
  });

  return {
    root: { certPem: root.pem, keyPem: await exportPkcs8Pem(rootKeys.privateKey) },
    intermediate: { certPem: intermediate.pem, keyPem: await exportPkcs8Pem(intermediateKeys.privateKey) },
    chainPem: intermediate.pem + root.pem,
  };
}

export interface LoadSignerOptions {
  /** PEM chain: the signing CA first, then (optionally) its issuers up to the root. */
  certPem: string;
  /** The signing CA's private key: PKCS#8, SEC1 (`EC PRIVATE KEY`) or PKCS#1 (`RSA PRIVATE KEY`) PEM. */
  keyPem: string;
  /** For an encrypted PKCS#8 key. */
  passphrase?: string;
  /** Reference time for the validity check (default now). */
  now?: Date;
}

/**
 * Loads an issuing CA from PEM (so operators can bring their own). Validates that the first certificate
 * is a CA allowed to sign certificates and currently valid, that the key belongs to it, and that each
 * further certificate signed the previous one. Throws `Error` with the reason.
 */
export async function loadSigner(options: LoadSignerOptions): Promise<Signer> {
  const chain = parsePemChain(options.certPem);
  const first = chain[0];
  if (!first) throw new Error('loadSigner: no certificate in certPem');
  const now = options.now ?? new Date();

  if (!first.isCa) throw new Error(`loadSigner: ${first.subject} is not a CA (basicConstraints cA is not set)`);
  if (first.keyUsage !== undefined && (first.keyUsage & KEY_USAGE.keyCertSign) === 0) {
    throw new Error(`loadSigner: ${first.subject} may not sign certificates (keyUsage lacks keyCertSign)`);
  }
  if (now < first.notBefore || now > first.notAfter) {
    throw new Error(
      `loadSigner: ${first.subject} is not valid now (${first.notBefore.toISOString()} – ${first.notAfter.toISOString()})`,
    );
  }
  for (let i = 1; i < chain.length; i++) {
    const child = chain[i - 1]!;
    const parent = chain[i]!;
    const ok =
      bytesEqual(child.raw.issuer, parent.raw.subject) &&
      (await child.x509.verify({ publicKey: parent.x509, signatureOnly: true }).catch(() => false));
    if (!ok)
      throw new Error(`loadSigner: certificate #${i + 1} (${parent.subject}) did not issue #${i} (${child.subject})`);
  }

  const imported = await importPrivateKeyPem(options.keyPem, options.passphrase);
  if (!(await keyMatchesCertificate(imported.key, imported.signingAlgorithm, first.x509))) {
    throw new Error(`loadSigner: the private key does not belong to ${first.subject}`);
  }

  return {
    certificate: first,
    chain,
    certPem: first.pem,
    chainPem: chain.map((c) => c.pem).join(''),
    issuingChainPem: chain
      .filter((c) => !c.selfIssued)
      .map((c) => c.pem)
      .join(''),
    privateKey: imported.key,
    signingAlgorithm: imported.signingAlgorithm,
  };
}
