/**
 * `/.well-known/est/cacerts` body (ZITI-FACTS §8.4): a degenerate, certs-only PKCS#7 SignedData in DER,
 * base64 (standard alphabet, padded), in 64-character lines joined by `\n`, no trailing newline.
 *
 * The DER is written here directly instead of through a schema library so that each certificate is
 * embedded byte-for-byte as supplied. The structure is the one Go's `pkcs7.DegenerateCertificate`
 * (fullsailor/pkcs7, used by the reference) produces, in canonical DER:
 *
 *   ContentInfo { contentType id-signedData,
 *     content [0] EXPLICIT SignedData { version 1, digestAlgorithms {}, encapContentInfo { id-data }
 *                                        (no eContent), certificates [0] IMPLICIT { cert… }, signerInfos {} } }
 *
 * (@peculiar/x509's `X509Certificates.export()` is not used: it adds an empty `eContent` OCTET STRING.)
 */
import 'reflect-metadata';
import { X509Certificates } from '@peculiar/x509';
import { parsePemChain } from './certificates.ts';
import { contextTag, der, encodeOid, encodePem, TAG, toArrayBuffer } from './der.ts';

const ID_SIGNED_DATA = '1.2.840.113549.1.7.2';
const ID_DATA = '1.2.840.113549.1.7.1';

/** DER of a certs-only PKCS#7 holding `certs` (DER each) in the given order. */
export function pkcs7CertsOnlyDer(certs: readonly Uint8Array[]): Uint8Array {
  const signedData = der(
    TAG.SEQUENCE,
    der(TAG.INTEGER, Uint8Array.of(1)),
    der(TAG.SET),
    der(TAG.SEQUENCE, encodeOid(ID_DATA)),
    der(contextTag(0, true), ...certs),
    der(TAG.SET),
  );
  return der(TAG.SEQUENCE, encodeOid(ID_SIGNED_DATA), der(contextTag(0, true), signedData));
}

/** Base64 in 64-character lines joined by `\n`, no trailing newline (the reference's layout). */
export function base64Lines(bytes: Uint8Array): string {
  return (
    Buffer.from(bytes)
      .toString('base64')
      .match(/.{1,64}/g) ?? []
  ).join('\n');
}

/**
 * The `/.well-known/est/cacerts` body for the given PEM texts (each may hold several certificates).
 * Exact duplicates are kept once, first occurrence wins.
 */
export function pkcs7CertsOnly(certPems: readonly string[]): string {
  const seen = new Set<string>();
  const certs: Uint8Array[] = [];
  for (const cert of certPems.flatMap((p) => parsePemChain(p))) {
    if (seen.has(cert.fingerprint)) continue;
    seen.add(cert.fingerprint);
    certs.push(cert.der);
  }
  return base64Lines(pkcs7CertsOnlyDer(certs));
}

/** Reads the certificates out of a cacerts body (base64, line breaks allowed) or DER, as PEM strings. */
export function parsePkcs7Certs(body: string | Uint8Array): string[] {
  const bytes = typeof body === 'string' ? new Uint8Array(Buffer.from(body.replace(/\s+/g, ''), 'base64')) : body;
  return [...new X509Certificates(toArrayBuffer(bytes))].map((c) =>
    encodePem('CERTIFICATE', new Uint8Array(c.rawData)),
  );
}
