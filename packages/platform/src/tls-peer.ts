import type { TLSSocket } from 'node:tls';

function derToPem(der: Buffer): string {
  const b64 =
    der
      .toString('base64')
      .match(/.{1,64}/g)
      ?.join('\n') ?? '';
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

/** The client certificate chain the peer presented, leaf first, as PEM (empty when none). */
export function clientCertificateChain(socket: TLSSocket): string[] {
  if (typeof socket.getPeerCertificate !== 'function') return [];
  const leaf = socket.getPeerCertificate(true);
  if (!leaf || !leaf.raw) return [];
  const chain: string[] = [];
  const seen = new Set<string>();
  let cert: typeof leaf | undefined = leaf;
  while (cert?.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    chain.push(derToPem(cert.raw));
    cert = cert.issuerCertificate as typeof leaf | undefined;
  }
  return chain;
}
