/**
 * Minimal DER/PEM helpers. Small on purpose: they exist to read and write the few structures where the
 * exact bytes matter (raw subject/issuer names, SAN entries, the certs-only PKCS#7) without a
 * decode/re-encode round trip through a schema library.
 */

/** One DER element: `tag` is the identifier octet; `start..end` covers header and content. */
export interface DerElement {
  readonly tag: number;
  readonly start: number;
  readonly contentStart: number;
  readonly end: number;
  /** The whole element (header + content). */
  readonly raw: Uint8Array;
  /** The content octets. */
  readonly content: Uint8Array;
}

export class DerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DerError';
  }
}

/** Reads the element starting at `offset` (DER: definite lengths only, single-octet tags only). */
export function readDer(buf: Uint8Array, offset = 0): DerElement {
  if (offset + 2 > buf.length) throw new DerError('truncated DER element');
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-octet DER tags are not supported');
  let pos = offset + 1;
  const first = buf[pos++]!;
  let length: number;
  if (first < 0x80) {
    length = first;
  } else {
    const n = first & 0x7f;
    if (n === 0) throw new DerError('indefinite lengths are not DER');
    if (n > 4) throw new DerError('DER length too large');
    if (pos + n > buf.length) throw new DerError('truncated DER length');
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + buf[pos++]!;
  }
  const contentStart = pos;
  const end = contentStart + length;
  if (end > buf.length) throw new DerError('truncated DER content');
  return {
    tag,
    start: offset,
    contentStart,
    end,
    raw: buf.subarray(offset, end),
    content: buf.subarray(contentStart, end),
  };
}

/** The elements directly inside a constructed element's content. */
export function readChildren(el: DerElement | Uint8Array): DerElement[] {
  const content = el instanceof Uint8Array ? el : el.content;
  const out: DerElement[] = [];
  let pos = 0;
  while (pos < content.length) {
    const child = readDer(content, pos);
    out.push(child);
    pos = child.end;
  }
  return out;
}

function encodeLength(length: number): Uint8Array {
  if (length < 0x80) return Uint8Array.of(length);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return Uint8Array.from([0x80 | bytes.length, ...bytes]);
}

/** Encodes one TLV with the given identifier octet and content. */
export function der(tag: number, ...content: Uint8Array[]): Uint8Array {
  const body = concatBytes(content);
  return concatBytes([Uint8Array.of(tag), encodeLength(body.length), body]);
}

export const TAG = {
  INTEGER: 0x02,
  OCTET_STRING: 0x04,
  OID: 0x06,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** Context-specific tag: constructed (`[n]` EXPLICIT / IMPLICIT constructed) or primitive (`[n]` IMPLICIT). */
export function contextTag(n: number, constructed: boolean): number {
  return 0x80 | (constructed ? 0x20 : 0) | n;
}

export function encodeOid(oid: string): Uint8Array {
  const parts = oid.split('.').map((p) => {
    if (!/^\d+$/.test(p)) throw new DerError(`invalid OID ${oid}`);
    return BigInt(p);
  });
  if (parts.length < 2) throw new DerError(`invalid OID ${oid}`);
  const out: number[] = [];
  const arcs = [parts[0]! * 40n + parts[1]!, ...parts.slice(2)];
  for (const arc of arcs) {
    const chunk: number[] = [Number(arc & 0x7fn)];
    for (let v = arc >> 7n; v > 0n; v >>= 7n) chunk.unshift(Number((v & 0x7fn) | 0x80n));
    out.push(...chunk);
  }
  return der(TAG.OID, Uint8Array.from(out));
}

export function decodeOid(content: Uint8Array): string {
  const arcs: bigint[] = [];
  let v = 0n;
  for (const b of content) {
    v = (v << 7n) | BigInt(b & 0x7f);
    if ((b & 0x80) === 0) {
      arcs.push(v);
      v = 0n;
    }
  }
  const first = arcs.shift() ?? 0n;
  const head = first < 80n ? [first / 40n, first % 40n] : [2n, first - 80n];
  return [...head, ...arcs].join('.');
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function toHex(bytes: Uint8Array | ArrayBuffer): string {
  return Buffer.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)).toString('hex');
}

/** A fresh ArrayBuffer holding exactly these bytes (webcrypto and the x509 library want BufferSource). */
export function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.slice().buffer as ArrayBuffer;
}

// ---------------------------------------------------------------------------------------------- PEM

export interface PemBlock {
  readonly label: string;
  readonly der: Uint8Array;
}

export class PemError extends Error {
  constructor(
    message: string,
    readonly kind: 'NO_BLOCK' | 'BAD_BLOCK' | 'TRAILING_DATA',
  ) {
    super(message);
    this.name = 'PemError';
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 #]+)-----([\s\S]*?)-----END ([A-Z0-9 #]+)-----/g;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Decodes every PEM block in `text`, like Go's repeated `pem.Decode`: text before a block is skipped,
 * non-blank text after the last block is an error. RFC 1421 headers (`Proc-Type: …`) are skipped.
 */
export function decodePem(text: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  let lastEnd = 0;
  for (const m of text.matchAll(PEM_BLOCK)) {
    const [whole, label = '', body = '', endLabel = ''] = m;
    if (label !== endLabel) throw new PemError(`PEM block BEGIN ${label} ends with END ${endLabel}`, 'BAD_BLOCK');
    let lines = body.split(/\r?\n/).map((l) => l.trim());
    while (lines.length > 0 && lines[0] === '') lines.shift();
    if (lines[0]?.includes(':')) {
      // RFC 1421 headers run up to the first blank line
      const blank = lines.indexOf('');
      lines = blank >= 0 ? lines.slice(blank + 1) : [];
    }
    const b64 = lines.join('').replace(/\s+/g, '');
    if (!BASE64.test(b64) || b64.length % 4 !== 0 || b64.length === 0) {
      throw new PemError(`PEM block ${label} has invalid base64`, 'BAD_BLOCK');
    }
    blocks.push({ label, der: new Uint8Array(Buffer.from(b64, 'base64')) });
    lastEnd = (m.index ?? 0) + whole.length;
  }
  if (blocks.length === 0) {
    if (text.trim() === '') return [];
    throw new PemError('no PEM block found', 'NO_BLOCK');
  }
  if (text.slice(lastEnd).trim() !== '')
    throw new PemError('unexpected data after the last PEM block', 'TRAILING_DATA');
  return blocks;
}

/** PEM with 64-character lines and a trailing newline (Go's `pem.EncodeToMemory` layout). */
export function encodePem(label: string, bytes: Uint8Array | ArrayBuffer): string {
  const b64 = Buffer.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}${lines.length ? '\n' : ''}-----END ${label}-----\n`;
}
