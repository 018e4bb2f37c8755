/** Byte helpers shared by the codecs: strict UTF-8, little-endian integers, concatenation. */
import { ChannelProtocolError, type ChannelProtocolErrorCode } from './errors.ts';

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);

export function utf8(value: string): Uint8Array {
  return utf8Encoder.encode(value);
}

/** Decodes UTF-8, throwing `code` on malformed input (Go's proto3 rejects such strings; tokens and ids are ASCII). */
export function fromUtf8(bytes: Uint8Array, code: ChannelProtocolErrorCode = 'invalid-header-value'): string {
  try {
    return utf8Decoder.decode(bytes);
  } catch {
    throw new ChannelProtocolError(code, 'invalid UTF-8');
  }
}

// In a `u` regexp a surrogate pair is one code point, so this matches only unpaired halves.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Lone surrogates become U+FFFD when encoded, so such a string would not survive a round trip; encoders refuse it
 * rather than send something other than what they were given.
 */
export function assertWellFormed(value: string, what: string): void {
  if (LONE_SURROGATE.test(value)) throw new ChannelProtocolError('invalid-message', `${what} has a lone surrogate`);
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

export function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function readUint32LE(bytes: Uint8Array, offset: number): number {
  return (bytes[offset]! | (bytes[offset + 1]! << 8) | (bytes[offset + 2]! << 16) | (bytes[offset + 3]! << 24)) >>> 0;
}

export function readInt32LE(bytes: Uint8Array, offset: number): number {
  return bytes[offset]! | (bytes[offset + 1]! << 8) | (bytes[offset + 2]! << 16) | (bytes[offset + 3]! << 24);
}

export function writeUint32LE(bytes: Uint8Array, offset: number, value: number): void {
  bytes[offset] = value & 0xff;
  bytes[offset + 1] = (value >>> 8) & 0xff;
  bytes[offset + 2] = (value >>> 16) & 0xff;
  bytes[offset + 3] = (value >>> 24) & 0xff;
}

export function isInt32(value: number): boolean {
  return Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff;
}

export function isUint32(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= 0xffffffff;
}

/** Compares byte strings the way Go compares strings (used to order map keys like Go's deterministic marshal). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i]! - b[i]!;
  }
  return a.length - b.length;
}
