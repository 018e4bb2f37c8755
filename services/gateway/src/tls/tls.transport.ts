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

/**
 * The cipher suites the edge offers: every TLS 1.3 suite, and for TLS 1.2 only ECDHE with an AEAD
 * (AES-GCM, ChaCha20-Poly1305); no CBC suites (Lucky13-style padding oracles), no static RSA key
 * exchange. Go's TLS stack (SDKs, routers, the CLI) and browsers offer these first.
 */
export const tlsCiphers = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');
