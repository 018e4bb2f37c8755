/**
 * Issuing certificates: signing enrollment CSRs (ZITI-FACTS §8.2: ott, ottca-less client certs, erott
 * client + server certs, router re-enrollment) and issuing the controller's own TLS server certificates.
 */
import 'reflect-metadata';
import {
  BasicConstraintsExtension,
  ExtendedKeyUsageExtension,
  Extension,
  KeyUsagesExtension,
  type Name,
  Pkcs10CertificateRequest,
  type PublicKey,
} from '@peculiar/x509';
import { ApiError } from '@ziti/contracts';
import {
  emptySans,
  encodeSanValue,
  hasSans,
  KEY_USAGE,
  OID,
  parseSanExtension,
  type SubjectAltNames,
} from './certificates.ts';
import { DerError, decodeOid, decodePem, readChildren, readDer, TAG, toArrayBuffer } from './der.ts';
import { describePublicKey, exportPkcs8Pem, generateKeyPair } from './keys.ts';
import { addDays, BACKDATE_MS, commonNameSubject, issueWithSigner, type Signer } from './signer.ts';

/** Largest CSR accepted (PEM text or DER), far above any real request. */
export const MAX_CSR_BYTES = 64 * 1024;
/** The reference signs enrollment client certificates for one year. */
export const DEFAULT_CLIENT_CERT_VALIDITY_DAYS = 365;

export interface CsrInfo {
  /** RFC 4514-style subject string. */
  readonly subject: string;
  readonly subjectName: Name;
  readonly commonName: string | undefined;
  /** DNS/IP/email/URI names requested through the extensionRequest attribute. */
  readonly sans: SubjectAltNames;
  readonly publicKey: PublicKey;
  /** e.g. `EC P-384`, `RSA 2048`, `Ed25519`. */
  readonly publicKeyAlgorithm: string;
  readonly request: Pkcs10CertificateRequest;
}

function csrError(message: string): ApiError {
  return new ApiError('COULD_NOT_PROCESS_CSR', { code: 'COULD_NOT_PROCESS_CSR', message });
}

function csrDer(csr: string | Uint8Array): Uint8Array {
  if (csr.length === 0) throw csrError('the CSR is empty');
  if (csr.length > MAX_CSR_BYTES) throw csrError('the CSR is too large');
  if (csr instanceof Uint8Array) return csr;
  let blocks: ReturnType<typeof decodePem>;
  try {
    blocks = decodePem(csr);
  } catch (err) {
    throw csrError(`could not decode the CSR as PEM: ${(err as Error).message}`);
  }
  if (blocks.length === 0) throw csrError('could not decode the CSR as PEM');
  if (blocks.length > 1) throw csrError('unexpected PEM blocks at end of CSR');
  const block = blocks[0]!;
  if (!block.label.endsWith('CERTIFICATE REQUEST'))
    throw csrError(`expected a CERTIFICATE REQUEST, got ${block.label}`);
  return block.der;
}

/** The extensions of the PKCS#9 extensionRequest attribute, read from the raw DER (robust to odd name forms). */
function requestedExtensions(derBytes: Uint8Array): Map<string, { critical: boolean; value: Uint8Array }> {
  const out = new Map<string, { critical: boolean; value: Uint8Array }>();
  const [info] = readChildren(readDer(derBytes));
  if (!info) throw new DerError('no certificationRequestInfo');
  const attributes = readChildren(info)[3];
  if (attributes?.tag !== 0xa0) return out;
  for (const attr of readChildren(attributes)) {
    const [type, values] = readChildren(attr);
    if (!type || type.tag !== TAG.OID || !values || decodeOid(type.content) !== OID.extensionRequest) continue;
    for (const exts of readChildren(values)) {
      for (const ext of readChildren(exts)) {
        const parts = readChildren(ext);
        const id = parts[0];
        const critical = parts.length === 3 && parts[1]?.content[0] === 0xff;
        const value = parts[parts.length - 1];
        if (!id || id.tag !== TAG.OID || !value || value.tag !== TAG.OCTET_STRING) throw new DerError('bad extension');
        out.set(decodeOid(id.content), { critical, value: value.content });
      }
    }
  }
  return out;
}

/**
 * Parses a CSR (PEM text or DER) and verifies its self-signature. Any problem → ApiError
 * COULD_NOT_PROCESS_CSR with the reason in `cause.message`.
 */
export async function parseCsr(csr: string | Uint8Array): Promise<CsrInfo> {
  const derBytes = csrDer(csr);
  let request: Pkcs10CertificateRequest;
  let sans: SubjectAltNames;
  let keyAlgorithm: { name: string };
  try {
    if (readDer(derBytes).end !== derBytes.length) throw new DerError('trailing data after the CSR');
    request = new Pkcs10CertificateRequest(toArrayBuffer(derBytes));
    const san = requestedExtensions(derBytes).get(OID.subjectAltName);
    sans = san ? parseSanExtension(san.value) : emptySans();
    // touch the lazily parsed parts so malformed input fails here, as COULD_NOT_PROCESS_CSR
    void request.subjectName;
    void request.signatureAlgorithm;
    keyAlgorithm = request.publicKey.algorithm as { name: string };
  } catch (err) {
    throw csrError(`could not parse the CSR: ${(err as Error).message}`);
  }

  const key = describePublicKey(keyAlgorithm);
  if (!key) throw csrError(`unsupported public key algorithm ${keyAlgorithm.name}`);
  if (key.kind === 'rsa' && key.modulusLength < 2048) {
    throw csrError(`RSA keys must have at least 2048 bits (got ${key.modulusLength})`);
  }

  let valid = false;
  try {
    valid = await request.verify();
  } catch (err) {
    throw csrError(`CSR signature validation failed: ${(err as Error).message}`);
  }
  if (!valid) throw csrError('CSR signature validation failed');

  return {
    subject: request.subject,
    subjectName: request.subjectName,
    commonName: request.subjectName.getField(OID.commonName)[0],
    sans,
    publicKey: request.publicKey,
    publicKeyAlgorithm:
      key.kind === 'ec' ? `EC ${key.curve}` : key.kind === 'rsa' ? `RSA ${key.modulusLength}` : 'Ed25519',
    request,
  };
}

export interface SignCsrOptions {
  /** `client`: EKU clientAuth, no SANs. `server`: EKU serverAuth + clientAuth, the CSR's DNS/IP/email/URI SANs. */
  kind: 'client' | 'server';
  /** NotAfter = now + validityDays (clamped to the signer's own NotAfter). */
  validityDays: number;
  now?: Date;
}

function checkValidityDays(days: number): void {
  if (!Number.isFinite(days) || days <= 0) throw new Error(`validityDays must be a positive number (got ${days})`);
}

function sanExtension(sans: SubjectAltNames, subjectIsEmpty: boolean): Extension {
  // RFC 5280 4.2.1.6: critical when the subject is empty.
  return new Extension(OID.subjectAltName, subjectIsEmpty, toArrayBuffer(encodeSanValue(sans)));
}

/**
 * Signs an enrollment CSR (ZITI-FACTS §8.2, ziti `common/cert/cert.go`): verifies the CSR self-signature
 * first, copies the subject, KeyUsage digitalSignature|keyEncipherment|dataEncipherment (critical),
 * basicConstraints CA:FALSE, NotBefore now−1 min, NotAfter now+validityDays, random ≥ 64-bit serial.
 * Returns the certificate PEM (leaf only; append `signer.issuingChainPem` for "leaf + intermediates").
 */
export async function signCsr(signer: Signer, csr: string | Uint8Array, options: SignCsrOptions): Promise<string> {
  if (options.kind !== 'client' && options.kind !== 'server')
    throw new Error(`unknown certificate kind ${options.kind}`);
  checkValidityDays(options.validityDays);
  const info = await parseCsr(csr);
  const now = options.now ?? new Date();

  const extensions: Extension[] = [
    new BasicConstraintsExtension(false, undefined, true),
    new KeyUsagesExtension(KEY_USAGE.digitalSignature | KEY_USAGE.keyEncipherment | KEY_USAGE.dataEncipherment, true),
  ];
  if (options.kind === 'client') {
    extensions.push(new ExtendedKeyUsageExtension([OID.clientAuth], false));
  } else {
    extensions.push(new ExtendedKeyUsageExtension([OID.serverAuth, OID.clientAuth], false));
    if (hasSans(info.sans)) extensions.push(sanExtension(info.sans, info.subjectName.toJSON().length === 0));
  }

  const cert = await issueWithSigner(signer, {
    subject: info.subjectName,
    publicKey: info.publicKey,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: addDays(now, options.validityDays),
    extensions,
  });
  return cert.pem;
}

export interface IssueServerCertificateOptions {
  commonName: string;
  dnsNames?: string[];
  ipAddresses?: string[];
  validityDays: number;
  now?: Date;
}

export interface IssuedCertificate {
  /** The new certificate. */
  certPem: string;
  /** Its private key, PKCS#8 PEM (ECDSA P-256). */
  keyPem: string;
  /** certificate + the signer's intermediates (no self-signed root): what a TLS listener serves. */
  chainPem: string;
}

/**
 * Issues a TLS server certificate with a new P-256 key: CN, DNS/IP SANs, EKU serverAuth + clientAuth,
 * KeyUsage digitalSignature|keyEncipherment. Throws `Error` for invalid names.
 */
export async function issueServerCertificate(
  signer: Signer,
  options: IssueServerCertificateOptions,
): Promise<IssuedCertificate> {
  checkValidityDays(options.validityDays);
  const commonName = options.commonName.trim();
  if (!commonName) throw new Error('issueServerCertificate: commonName is required');
  const sans: SubjectAltNames = {
    ...emptySans(),
    dnsNames: [...(options.dnsNames ?? [])],
    ipAddresses: [...(options.ipAddresses ?? [])],
  };
  for (const d of sans.dnsNames) {
    if (
      !/^(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/.test(d)
    ) {
      throw new Error(`issueServerCertificate: invalid DNS name ${d}`);
    }
  }
  const extensions: Extension[] = [
    new BasicConstraintsExtension(false, undefined, true),
    new KeyUsagesExtension(KEY_USAGE.digitalSignature | KEY_USAGE.keyEncipherment, true),
    new ExtendedKeyUsageExtension([OID.serverAuth, OID.clientAuth], false),
  ];
  if (hasSans(sans)) extensions.push(sanExtension(sans, false)); // invalid IPs throw here

  const now = options.now ?? new Date();
  const keys = await generateKeyPair();
  const cert = await issueWithSigner(signer, {
    subject: commonNameSubject(commonName),
    publicKey: keys.publicKey,
    notBefore: new Date(now.getTime() - BACKDATE_MS),
    notAfter: addDays(now, options.validityDays),
    extensions,
  });
  return {
    certPem: cert.pem,
    keyPem: await exportPkcs8Pem(keys.privateKey),
    chainPem: cert.pem + signer.issuingChainPem,
  };
}
