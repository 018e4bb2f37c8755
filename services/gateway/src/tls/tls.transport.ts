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
