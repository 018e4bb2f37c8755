import 'reflect-metadata';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

/** Decodes the body of `/.well-known/est/cacerts` (base64 PKCS#7 certs-only) into PEM certificates. */
export function certificatesFromPkcs7Base64(body: string): string[] {
  const der = Buffer.from(body.replace(/\s+/g, ''), 'base64');
  const asn = asn1js.fromBER(new Uint8Array(der).buffer);
  if (asn.offset === -1) throw new Error('cacerts body is not BER');
  const info = new pkijs.ContentInfo({ schema: asn.result });
  const signed = new pkijs.SignedData({ schema: info.content });
  return (signed.certificates ?? []).map((c) => {
    const b64 = Buffer.from((c as pkijs.Certificate).toSchema().toBER(false)).toString('base64');
    return `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
  });
}
