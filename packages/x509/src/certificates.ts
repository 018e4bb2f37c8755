/**
 * Certificate parsing helpers: PEM chains, fingerprints, raw names, subject alternative names.
 */
import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  ExtendedKeyUsageExtension,
  KeyUsagesExtension,
  SubjectKeyIdentifierExtension,
  X509Certificate,
} from '@peculiar/x509';
import { ApiError } from '@ziti/contracts';
import {
  bytesEqual,
  contextTag,
  DerError,
  decodePem,
  der,
  encodePem,
  readChildren,
  readDer,
  TAG,
  toArrayBuffer,
} from './der.ts';
import { describePublicKey } from './keys.ts';

export const OID = {
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  nameConstraints: '2.5.29.30',
  certificatePolicies: '2.5.29.32',
  policyMappings: '2.5.29.33',
  policyConstraints: '2.5.29.36',
  inhibitAnyPolicy: '2.5.29.54',
  extensionRequest: '1.2.840.113549.1.9.14',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  anyExtendedKeyUsage: '2.5.29.37.0',
  commonName: '2.5.4.3',
} as const;

/** RFC 5280 keyUsage bits as the x509 library numbers them. */
export const KEY_USAGE = {
  digitalSignature: 1,
  nonRepudiation: 2,
  keyEncipherment: 4,
  dataEncipherment: 8,
  keyAgreement: 16,
  keyCertSign: 32,
  cRLSign: 64,
} as const;

// -------------------------------------------------------------------------------------- fingerprint

/** Lower-case hex SHA-1 of the DER, no separators (the OpenZiti cert fingerprint). */
export function fingerprintDer(derBytes: Uint8Array): string {
  return createHash('sha1').update(derBytes).digest('hex');
}

/** Fingerprint of the first certificate in `cert` (PEM text, possibly a chain, or DER bytes). */
export function fingerprint(cert: string | Uint8Array): string {
  if (cert instanceof Uint8Array) return fingerprintDer(cert);
  const first = parsePemChain(cert)[0];
  if (!first) throw new ApiError('COULD_NOT_PARSE_PEM_BLOCK', { message: 'no certificate found' });
  return first.fingerprint;
}

// ------------------------------------------------------------------------------------ raw TBS walk

export interface RawTbs {
  /** X.509 version as written (1, 2 or 3). */
  readonly version: number;
  readonly issuer: Uint8Array;
  readonly subject: Uint8Array;
}

/** The exact DER of issuer and subject names (chain building compares bytes, like Go). */
export function rawTbs(certDer: Uint8Array): RawTbs {
  const cert = readDer(certDer);
  if (cert.tag !== TAG.SEQUENCE || cert.end !== certDer.length) throw new DerError('not a certificate');
  const tbs = readChildren(cert)[0];
  if (!tbs || tbs.tag !== TAG.SEQUENCE) throw new DerError('not a certificate');
  const fields = readChildren(tbs);
  let i = 0;
  let version = 1;
  if (fields[0]?.tag === contextTag(0, true)) {
    const v = readChildren(fields[0])[0];
    version = (v?.content[0] ?? 0) + 1;
    i = 1;
  }
  const issuer = fields[i + 2];
  const subject = fields[i + 4];
  if (!issuer || !subject || issuer.tag !== TAG.SEQUENCE || subject.tag !== TAG.SEQUENCE) {
    throw new DerError('not a certificate');
  }
  return { version, issuer: issuer.raw, subject: subject.raw };
}

// --------------------------------------------------------------------------------- subject alt names

export interface SubjectAltNames {
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
}

const SAN_TAG = { email: 1, dns: 2, uri: 6, ip: 7 } as const;
/** IA5String content: 7-bit ASCII. */
function isIa5(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

export function emptySans(): SubjectAltNames {
  return { dnsNames: [], ipAddresses: [], emailAddresses: [], uris: [] };
}

/** Formats a 4- or 16-byte iPAddress value. */
export function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return [...bytes].join('.');
  if (bytes.length !== 16) throw new DerError(`invalid IP address length ${bytes.length}`);
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  // RFC 5952: compress the longest run (≥ 2) of zero groups, lower-case hex
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** Parses an IPv4 or IPv6 text address to its 4/16 bytes; throws on anything else. */
export function parseIp(text: string): Uint8Array {
  if (isIPv4(text)) return Uint8Array.from(text.split('.').map(Number));
  if (!isIPv6(text) || text.includes('%')) throw new Error(`invalid IP address ${text}`);
  let head = text;
  const tailV4: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const maybeV4 = text.slice(lastColon + 1);
  if (maybeV4.includes('.')) {
    tailV4.push(...maybeV4.split('.').map(Number));
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [left = '', right] = head.split('::');
  const l = left ? left.split(':') : [];
  const r = right !== undefined && right !== '' ? right.split(':') : [];
  const fill = right === undefined ? [] : new Array<string>(8 - l.length - r.length).fill('0');
  const groups = [...l, ...fill, ...r].map((g) => Number.parseInt(g, 16));
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  if (tailV4.length === 4) out.set(tailV4, 12);
  return out;
}

/** Reads the DNS/IP/email/URI entries of a SubjectAltName extension value; other name forms are skipped. */
export function parseSanExtension(value: Uint8Array): SubjectAltNames {
  const seq = readDer(value);
  if (seq.tag !== TAG.SEQUENCE || seq.end !== value.length) throw new DerError('invalid subjectAltName');
  const out = emptySans();
  for (const name of readChildren(seq)) {
    if ((name.tag & 0xc0) !== 0x80) throw new DerError('invalid GeneralName');
    const n = name.tag & 0x1f;
    const constructed = (name.tag & 0x20) !== 0;
    if (constructed) continue; // otherName, directoryName, … — not copied (Go ignores them too)
    const text = () => {
      const s = Buffer.from(name.content).toString('latin1');
      if (!isIa5(s)) throw new DerError('SAN value is not IA5String');
      return s;
    };
    if (n === SAN_TAG.dns) out.dnsNames.push(text());
    else if (n === SAN_TAG.email) out.emailAddresses.push(text());
    else if (n === SAN_TAG.uri) out.uris.push(text());
    else if (n === SAN_TAG.ip) out.ipAddresses.push(formatIp(name.content));
  }
  return out;
}

/** DER of a GeneralNames SEQUENCE with the given entries (order: DNS, email, IP, URI — like Go). */
export function encodeSanValue(sans: SubjectAltNames): Uint8Array {
  const ia5 = (s: string, what: string) => {
    if (!isIa5(s)) throw new Error(`${what} ${s} is not ASCII`);
    return new Uint8Array(Buffer.from(s, 'latin1'));
  };
  const parts: Uint8Array[] = [
    ...sans.dnsNames.map((d) => der(contextTag(SAN_TAG.dns, false), ia5(d, 'DNS name'))),
    ...sans.emailAddresses.map((e) => der(contextTag(SAN_TAG.email, false), ia5(e, 'email address'))),
    ...sans.ipAddresses.map((ip) => der(contextTag(SAN_TAG.ip, false), parseIp(ip))),
    ...sans.uris.map((u) => der(contextTag(SAN_TAG.uri, false), ia5(u, 'URI'))),
  ];
  return der(TAG.SEQUENCE, ...parts);
}

export function hasSans(sans: SubjectAltNames): boolean {
  return sans.dnsNames.length + sans.ipAddresses.length + sans.emailAddresses.length + sans.uris.length > 0;
}

// ------------------------------------------------------------------------------- certificate info

export interface CertificateInfo {
  readonly pem: string;
  readonly der: Uint8Array;
  /** Lower-case hex SHA-1 of the DER. */
  readonly fingerprint: string;
  /** RFC 4514-style string of the subject, e.g. `CN=foo, O=bar`. */
  readonly subject: string;
  readonly issuer: string;
  /** The first CN attribute of the subject. */
  readonly commonName: string | undefined;
  /** Hex serial number. */
  readonly serialNumber: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly version: number;
  /** basicConstraints cA=TRUE. */
  readonly isCa: boolean;
  readonly pathLength: number | undefined;
  /** issuer name bytes equal the subject name bytes. */
  readonly selfIssued: boolean;
  /** keyUsage bit mask (`KEY_USAGE`), undefined when the extension is absent. */
  readonly keyUsage: number | undefined;
  /** extKeyUsage OIDs, undefined when the extension is absent. */
  readonly extKeyUsage: readonly string[] | undefined;
  readonly sans: SubjectAltNames;
  readonly subjectKeyIdentifier: string | undefined;
  readonly authorityKeyIdentifier: string | undefined;
  /** e.g. `EC P-256`, `RSA 2048`, `Ed25519`, or the raw algorithm name. */
  readonly publicKeyAlgorithm: string;
  readonly raw: RawTbs;
  readonly x509: X509Certificate;
}

function hexOf(ext: { keyId?: string } | null): string | undefined {
  return ext?.keyId ? ext.keyId.toLowerCase() : undefined;
}

/** Parses one DER certificate; throws `DerError`/library errors on malformed input. */
export function certificateFromDer(derBytes: Uint8Array): CertificateInfo {
  const raw = rawTbs(derBytes);
  const x509 = new X509Certificate(toArrayBuffer(derBytes));
  const bc = x509.getExtension(BasicConstraintsExtension);
  const ku = x509.getExtension(KeyUsagesExtension);
  const eku = x509.getExtension(ExtendedKeyUsageExtension);
  const sanExt = x509.getExtension(OID.subjectAltName);
  const ski = x509.getExtension(SubjectKeyIdentifierExtension);
  const aki = x509.getExtension(AuthorityKeyIdentifierExtension);
  const key = describePublicKey(x509.publicKey.algorithm as { name: string });
  const publicKeyAlgorithm = !key
    ? x509.publicKey.algorithm.name
    : key.kind === 'ec'
      ? `EC ${key.curve}`
      : key.kind === 'rsa'
        ? `RSA ${key.modulusLength}`
        : 'Ed25519';
  return {
    pem: encodePem('CERTIFICATE', derBytes),
    der: derBytes,
    fingerprint: fingerprintDer(derBytes),
    subject: x509.subject,
    issuer: x509.issuer,
    commonName: x509.subjectName.getField(OID.commonName)[0],
    serialNumber: x509.serialNumber.toLowerCase(),
    notBefore: x509.notBefore,
    notAfter: x509.notAfter,
    version: raw.version,
    isCa: bc?.ca === true,
    pathLength: bc?.ca ? bc.pathLength : undefined,
    selfIssued: bytesEqual(raw.issuer, raw.subject),
    keyUsage: ku ? ku.usages : undefined,
    extKeyUsage: eku ? eku.usages.map(String) : undefined,
    sans: sanExt ? parseSanExtension(new Uint8Array(sanExt.value)) : emptySans(),
    subjectKeyIdentifier: hexOf(ski),
    authorityKeyIdentifier: hexOf(aki),
    publicKeyAlgorithm,
    raw,
    x509,
  };
}

/**
 * Parses every certificate of a PEM bundle, in order. Empty input → `[]`.
 * Errors (as `ApiError`): no PEM at all → COULD_NOT_PARSE_PEM_BLOCK; a block that is not a
 * `CERTIFICATE` → EXPECTED_PEM_CERTIFICATE; a block whose DER is not a certificate →
 * COULD_NOT_PARSE_DER_BLOCK. Callers map these to their endpoint's codes where they differ.
 */
export function parsePemChain(text: string): CertificateInfo[] {
  let blocks: ReturnType<typeof decodePem>;
  try {
    blocks = decodePem(text);
  } catch (err) {
    throw new ApiError('COULD_NOT_PARSE_PEM_BLOCK', { message: (err as Error).message });
  }
  return blocks.map((block, i) => {
    if (block.label !== 'CERTIFICATE') {
      throw new ApiError('EXPECTED_PEM_CERTIFICATE', { message: `block #${i + 1} is ${block.label}` });
    }
    try {
      return certificateFromDer(block.der);
    } catch (err) {
      throw new ApiError('COULD_NOT_PARSE_DER_BLOCK', {
        message: `block #${i + 1} is not an x509 certificate: ${(err as Error).message}`,
      });
    }
  });
}

/** PEM of each certificate in a bundle, normalised (64-char lines, `\n`). */
export function splitPemChain(text: string): string[] {
  return parsePemChain(text).map((c) => c.pem);
}
