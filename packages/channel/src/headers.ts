/**
 * Header value encodings (openziti/channel v2.0.143 `message.go` Put*Header / Get*Header, EncodeStringSlice,
 * EncodeU32ToBytesMap, EncodeStringToStringMap), the well-known header keys, the controller capability mask
 * (ziti `common/capabilities`) and the version header (foundation `versions.StdVersionEncDec`).
 */
import { assertWellFormed, EMPTY_BYTES, fromUtf8, isUint32, readUint32LE, utf8, writeUint32LE } from './bytes.ts';
import { ChannelProtocolError } from './errors.ts';
import type { ChannelMessage } from './frame.ts';

// channel message.go: 0-127 channel, 128-255 reflected into replies, 1000-1099 edge, 1100-1199 control plane.
export const ChannelHeader = {
  ConnectionId: 0,
  ReplyFor: 1,
  ResultSuccess: 2,
  HelloRouterAdvertisements: 3,
  HelloVersion: 4,
  Heartbeat: 5,
  HeartbeatResponse: 6,
  Type: 7,
  Id: 8,
  /** channel latency/latency.go probeTime: a reflected uint64 send time (ns). */
  LatencyProbeTime: 128,
} as const;

// ziti ctrl.proto ControlHeaders: hello headers of the control channel.
export const ControlHeader = {
  Listeners: 10,
  RouterMetadata: 11,
  Capabilities: 12,
} as const;

// A Result's headers: channel message.go ResultSuccessHeader, ziti ctrl_msg HeaderResultErrorCode (uint32).
export const ResultHeader = {
  Success: 2,
  ErrorCode: 10,
} as const;

// ziti common/ctrl_msg/messages.go ResultErrorRateLimited (common/handler_common SendServerBusy).
export const ResultErrorCode = { RateLimited: 1 } as const;

// channel messages.go: content types owned by the channel itself.
export const ChannelContentType = {
  Hello: 0,
  Ping: 1,
  Result: 2,
  Latency: 3,
  LatencyResponse: 4,
  Heartbeat: 5,
} as const;

/** An encoding of one header value. `decode` throws `ChannelProtocolError` on bytes the reference would not read. */
export interface HeaderCodec<T> {
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array): T;
}

function bad(what: string, detail: string): never {
  throw new ChannelProtocolError('invalid-header-value', `${what}: ${detail}`);
}

function fixedLength(bytes: Uint8Array, length: number, what: string): DataView {
  if (bytes.length !== length) bad(what, `expected ${length} bytes, got ${bytes.length}`);
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function checkInteger(value: number, min: number, max: number, what: string): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ChannelProtocolError('invalid-message', `${what} out of range: ${value}`);
  }
}

export const int32Header: HeaderCodec<number> = {
  encode(value) {
    checkInteger(value, -0x80000000, 0x7fffffff, 'int32');
    const out = new Uint8Array(4);
    new DataView(out.buffer).setInt32(0, value, true);
    return out;
  },
  decode: (bytes) => fixedLength(bytes, 4, 'int32').getInt32(0, true),
};

export const uint32Header: HeaderCodec<number> = {
  encode(value) {
    checkInteger(value, 0, 0xffffffff, 'uint32');
    const out = new Uint8Array(4);
    new DataView(out.buffer).setUint32(0, value, true);
    return out;
  },
  decode: (bytes) => fixedLength(bytes, 4, 'uint32').getUint32(0, true),
};

export const uint16Header: HeaderCodec<number> = {
  encode(value) {
    checkInteger(value, 0, 0xffff, 'uint16');
    const out = new Uint8Array(2);
    new DataView(out.buffer).setUint16(0, value, true);
    return out;
  },
  decode: (bytes) => fixedLength(bytes, 2, 'uint16').getUint16(0, true),
};

function checkBigInt(value: bigint, signed: boolean, what: string): void {
  if (typeof value !== 'bigint' || (signed ? BigInt.asIntN(64, value) : BigInt.asUintN(64, value)) !== value) {
    throw new ChannelProtocolError('invalid-message', `${what} out of range: ${String(value)}`);
  }
}

export const uint64Header: HeaderCodec<bigint> = {
  encode(value) {
    checkBigInt(value, false, 'uint64');
    const out = new Uint8Array(8);
    new DataView(out.buffer).setBigUint64(0, value, true);
    return out;
  },
  decode: (bytes) => fixedLength(bytes, 8, 'uint64').getBigUint64(0, true),
};

export const int64Header: HeaderCodec<bigint> = {
  encode(value) {
    checkBigInt(value, true, 'int64');
    const out = new Uint8Array(8);
    new DataView(out.buffer).setBigInt64(0, value, true);
    return out;
  },
  decode: (bytes) => fixedLength(bytes, 8, 'int64').getBigInt64(0, true),
};

/** message.go PutByteHeader/GetByteHeader: one byte; the reference reads the first byte of a longer value. */
export const byteHeader: HeaderCodec<number> = {
  encode(value) {
    checkInteger(value, 0, 0xff, 'byte');
    return Uint8Array.of(value);
  },
  decode: (bytes) => (bytes.length === 0 ? bad('byte', 'empty') : bytes[0]!),
};

/** message.go GetBoolHeader: true only when the first byte is 1; an empty or other value reads as false. */
export const boolHeader: HeaderCodec<boolean> = {
  encode: (value) => Uint8Array.of(value ? 1 : 0),
  decode: (bytes) => bytes.length > 0 && bytes[0] === 1,
};

/** message.go PutStringHeader: the raw UTF-8 bytes, no length prefix. */
export const stringHeader: HeaderCodec<string> = {
  encode(value) {
    assertWellFormed(value, 'string header');
    return utf8(value);
  },
  decode: (bytes) => fromUtf8(bytes),
};

export const bytesHeader: HeaderCodec<Uint8Array> = {
  encode: (value) => value,
  decode: (bytes) => bytes,
};

// message.go DecodeStringSlice / DecodeU32ToBytesMap / DecodeStringToStringMap / DecodeString limits.
export const MAX_ENCODED_COLLECTION_ENTRIES = 128;
export const MAX_ENCODED_STRING_BYTES = 8192;

class SliceReader {
  private pos = 0;
  constructor(
    private readonly bytes: Uint8Array,
    private readonly what: string,
  ) {}

  uint32(field: string): number {
    if (this.bytes.length - this.pos < 4) bad(this.what, `not enough bytes for ${field}`);
    const v = readUint32LE(this.bytes, this.pos);
    this.pos += 4;
    return v;
  }

  chunk(field: string): Uint8Array {
    const length = this.uint32(`${field} length`);
    if (length > MAX_ENCODED_STRING_BYTES) bad(this.what, `${field} longer than ${MAX_ENCODED_STRING_BYTES}`);
    if (length > this.bytes.length - this.pos) bad(this.what, `${field} longer than remaining data`);
    const out = this.bytes.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }

  count(): number {
    const n = this.uint32('count');
    if (n > MAX_ENCODED_COLLECTION_ENTRIES) bad(this.what, `more than ${MAX_ENCODED_COLLECTION_ENTRIES} entries`);
    return n;
  }

  end(): void {
    // The reference ignores bytes after the last entry; its encoder never leaves any, so they mean a bad peer.
    if (this.pos !== this.bytes.length) bad(this.what, `${this.bytes.length - this.pos} trailing bytes`);
  }
}

class SliceWriter {
  private readonly parts: Uint8Array[] = [];
  private length = 0;

  uint32(value: number): void {
    const b = new Uint8Array(4);
    writeUint32LE(b, 0, value);
    this.parts.push(b);
    this.length += 4;
  }

  chunk(value: Uint8Array, what: string): void {
    if (value.length > MAX_ENCODED_STRING_BYTES) {
      throw new ChannelProtocolError('invalid-message', `${what} longer than ${MAX_ENCODED_STRING_BYTES} bytes`);
    }
    this.uint32(value.length);
    this.parts.push(value);
    this.length += value.length;
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const p of this.parts) {
      out.set(p, offset);
      offset += p.length;
    }
    return out;
  }
}

function checkCount(n: number, what: string): void {
  if (n > MAX_ENCODED_COLLECTION_ENTRIES) {
    throw new ChannelProtocolError('invalid-message', `${what}: more than ${MAX_ENCODED_COLLECTION_ENTRIES} entries`);
  }
}

/**
 * message.go EncodeStringSlice: uint32 LE count, then per string a uint32 LE length and the bytes. An empty slice
 * encodes as no bytes (the header is still present, with length 0), and no bytes decode as an empty slice.
 */
export const stringSliceHeader: HeaderCodec<string[]> = {
  encode(values) {
    if (values.length === 0) return EMPTY_BYTES;
    checkCount(values.length, 'string slice');
    const w = new SliceWriter();
    w.uint32(values.length);
    for (const v of values) {
      assertWellFormed(v, 'string slice entry');
      w.chunk(utf8(v), 'string slice entry');
    }
    return w.finish();
  },
  decode(bytes) {
    if (bytes.length === 0) return [];
    const r = new SliceReader(bytes, 'string slice');
    const n = r.count();
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(fromUtf8(r.chunk('string')));
    r.end();
    return out;
  },
};

/**
 * message.go EncodeStringToStringMap: uint32 LE count, then per entry the key and the value, each a uint32 LE length
 * and bytes. Entries go out in map order (the reference's order is Go's random map order).
 */
export const stringMapHeader: HeaderCodec<Map<string, string>> = {
  encode(map) {
    if (map.size === 0) return EMPTY_BYTES;
    checkCount(map.size, 'string map');
    const w = new SliceWriter();
    w.uint32(map.size);
    for (const [k, v] of map) {
      assertWellFormed(k, 'string map key');
      assertWellFormed(v, 'string map value');
      w.chunk(utf8(k), 'string map key');
      w.chunk(utf8(v), 'string map value');
    }
    return w.finish();
  },
  decode(bytes) {
    const out = new Map<string, string>();
    if (bytes.length === 0) return out;
    const r = new SliceReader(bytes, 'string map');
    const n = r.count();
    for (let i = 0; i < n; i++) {
      const key = fromUtf8(r.chunk('key'));
      const value = fromUtf8(r.chunk('value'));
      if (out.has(key)) bad('string map', `key ${JSON.stringify(key)} repeated`);
      out.set(key, value);
    }
    r.end();
    return out;
  },
};

/**
 * message.go EncodeU32ToBytesMap (peer data in CreateCircuitV2): uint32 LE count, then per entry a uint32 LE key,
 * a uint32 LE length and the bytes. An empty value decodes as empty bytes (nil in the reference).
 */
export const u32BytesMapHeader: HeaderCodec<Map<number, Uint8Array>> = {
  encode(map) {
    if (map.size === 0) return EMPTY_BYTES;
    checkCount(map.size, 'uint32->bytes map');
    const w = new SliceWriter();
    w.uint32(map.size);
    for (const [k, v] of map) {
      if (!isUint32(k)) throw new ChannelProtocolError('invalid-message', `uint32->bytes map key ${k}`);
      w.uint32(k);
      w.chunk(v, 'uint32->bytes map entry');
    }
    return w.finish();
  },
  decode(bytes) {
    const out = new Map<number, Uint8Array>();
    if (bytes.length === 0) return out;
    const r = new SliceReader(bytes, 'uint32->bytes map');
    const n = r.count();
    for (let i = 0; i < n; i++) {
      const key = r.uint32('key');
      const value = r.chunk('entry');
      if (out.has(key)) bad('uint32->bytes map', `key ${key} repeated`);
      out.set(key, value);
    }
    r.end();
    return out;
  },
};

// ziti common/capabilities/capabilities.go
export const ControllerCapability = {
  CreateTerminatorV2: 1,
  SingleRouterLinkSource: 2,
  CreateCircuitV2: 3,
} as const;

/** Capability header 12 above 1 KiB is not a mask any reference version sends. */
const MAX_CAPABILITY_BYTES = 1024;

/**
 * ziti controller.go Run / common/capabilities IsCapable: a big.Int bitmask as `big.Int.Bytes()`, i.e. minimal
 * big-endian bytes (no bits set encodes as no bytes); leading zero bytes are accepted on decode like `SetBytes`.
 */
export const capabilitiesHeader: HeaderCodec<Set<number>> = {
  encode(bits) {
    let mask = 0n;
    for (const bit of bits) {
      checkInteger(bit, 0, MAX_CAPABILITY_BYTES * 8 - 1, 'capability bit');
      mask |= 1n << BigInt(bit);
    }
    if (mask === 0n) return EMPTY_BYTES;
    const hex = mask.toString(16);
    const padded = hex.length % 2 === 0 ? hex : `0${hex}`;
    const out = new Uint8Array(padded.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(padded.slice(2 * i, 2 * i + 2), 16);
    return out;
  },
  decode(bytes) {
    if (bytes.length > MAX_CAPABILITY_BYTES) bad('capabilities', `longer than ${MAX_CAPABILITY_BYTES} bytes`);
    const bits = new Set<number>();
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[bytes.length - 1 - i]!;
      for (let b = 0; b < 8; b++) if (byte & (1 << b)) bits.add(i * 8 + b);
    }
    return bits;
  },
};

/** foundation versions.VersionInfo, carried in hello header 4. */
export interface VersionInfo {
  version: string;
  revision: string;
  buildDate: string;
  os: string;
  arch: string;
}

/**
 * foundation versions.StdVersionEncDec: `version|revision|buildDate|os|arch` with no escaping; decode splits on `|`
 * and requires exactly five parts, so no field may contain `|`.
 */
export const versionHeader: HeaderCodec<VersionInfo> = {
  encode(info) {
    const fields = [info.version, info.revision, info.buildDate, info.os, info.arch];
    for (const f of fields) {
      if (typeof f !== 'string' || f.includes('|')) {
        throw new ChannelProtocolError('invalid-message', 'version fields are strings without "|"');
      }
      assertWellFormed(f, 'version field');
    }
    return utf8(fields.join('|'));
  },
  decode(bytes) {
    let text: string;
    try {
      text = fromUtf8(bytes);
    } catch {
      throw new ChannelProtocolError('invalid-version', 'version header is not UTF-8');
    }
    const parts = text.split('|');
    if (parts.length !== 5) {
      throw new ChannelProtocolError('invalid-version', `expected 5 values got ${parts.length}`);
    }
    const [version, revision, buildDate, os, arch] = parts as [string, string, string, string, string];
    return { version, revision, buildDate, os, arch };
  },
};

type HeaderSource = ChannelMessage | Map<number, Uint8Array>;

function headersOf(source: HeaderSource): Map<number, Uint8Array> {
  return source instanceof Map ? source : source.headers;
}

export function hasHeader(source: HeaderSource, key: number): boolean {
  return headersOf(source).has(key);
}

/** The decoded header, or undefined when absent. Throws `ChannelProtocolError` when present but malformed. */
export function getHeader<T>(source: HeaderSource, key: number, codec: HeaderCodec<T>): T | undefined {
  const raw = headersOf(source).get(key);
  return raw === undefined ? undefined : codec.decode(raw);
}

/** Like `getHeader`, but a missing header is a `missing-header` error. */
export function requireHeader<T>(source: HeaderSource, key: number, codec: HeaderCodec<T>): T {
  const raw = headersOf(source).get(key);
  if (raw === undefined) throw new ChannelProtocolError('missing-header', `header ${key}`);
  return codec.decode(raw);
}

export function setHeader<T>(target: HeaderSource, key: number, codec: HeaderCodec<T>, value: T): void {
  headersOf(target).set(key, codec.encode(value));
}
