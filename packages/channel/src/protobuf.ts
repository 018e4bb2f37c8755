/**
 * A small, strict proto3 wire reader and writer. It follows the rules of google.golang.org/protobuf `protowire`
 * (the encoder the reference links): varints of at most 10 bytes whose 10th byte is 0 or 1, field numbers
 * 1..2^29-1, wire types 0, 1, 2, 3, 4 and 5 only, lengths that fit the data left. Anything else is a
 * `ChannelProtocolError`; nothing here recurses on input except skipping groups, which is depth-bounded.
 */
import { fromUtf8, utf8 } from './bytes.ts';
import { ChannelProtocolError } from './errors.ts';

export const WireType = {
  Varint: 0,
  Fixed64: 1,
  LengthDelimited: 2,
  StartGroup: 3,
  EndGroup: 4,
  Fixed32: 5,
} as const;
export type WireType = (typeof WireType)[keyof typeof WireType];

// protowire.MaxValidNumber
export const MAX_FIELD_NUMBER = 2 ** 29 - 1;
export const DEFAULT_PROTO_MAX_DEPTH = 32;
export const DEFAULT_PROTO_MAX_BYTES = 16 * 1024 * 1024;

export interface ProtoTag {
  fieldNumber: number;
  wireType: WireType;
}

export interface ProtoReaderOptions {
  /** Nesting bound for sub-messages and skipped groups. */
  maxDepth?: number;
  /** Input larger than this is refused before reading. */
  maxBytes?: number;
}

export class ProtoReader {
  readonly depth: number;
  readonly maxDepth: number;
  private readonly buf: Uint8Array;
  private pos: number;
  private readonly end: number;

  constructor(buf: Uint8Array, options: ProtoReaderOptions = {}, depth = 0) {
    const maxBytes = options.maxBytes ?? DEFAULT_PROTO_MAX_BYTES;
    if (depth === 0 && buf.length > maxBytes) {
      throw new ChannelProtocolError('protobuf-too-large', `${buf.length} > ${maxBytes} bytes`);
    }
    this.maxDepth = options.maxDepth ?? DEFAULT_PROTO_MAX_DEPTH;
    if (depth > this.maxDepth) throw new ChannelProtocolError('protobuf-depth', `nesting deeper than ${this.maxDepth}`);
    this.buf = buf;
    this.pos = 0;
    this.end = buf.length;
    this.depth = depth;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  get offset(): number {
    return this.pos;
  }

  tag(): ProtoTag {
    const [lo, hi] = this.varint64();
    // protowire.ConsumeTag: number = v >> 3 must be a valid field number.
    const fieldNumber = hi === 0 ? lo >>> 3 : -1;
    const wireType = lo & 7;
    if (fieldNumber < 1 || fieldNumber > MAX_FIELD_NUMBER) {
      throw new ChannelProtocolError('protobuf-field-number', `field number out of range`);
    }
    if (wireType > 5) throw new ChannelProtocolError('protobuf-wire-type', `wire type ${wireType}`);
    return { fieldNumber, wireType: wireType as WireType };
  }

  /** A varint as its low and high 32 bits (both unsigned). */
  varint64(): [number, number] {
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ChannelProtocolError('protobuf-truncated', 'varint');
      const b = this.buf[this.pos++]!;
      if (i < 4) lo |= (b & 0x7f) << (7 * i);
      else if (i === 4) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >>> 4;
      } else hi |= (b & 0x7f) << (7 * i - 32);
      if (i === 9 && b > 1) throw new ChannelProtocolError('protobuf-varint-overflow', 'varint above 2^64');
      if ((b & 0x80) === 0) return [lo >>> 0, hi >>> 0];
    }
    throw new ChannelProtocolError('protobuf-varint-overflow', 'varint longer than 10 bytes');
  }

  uint32(): number {
    return this.varint64()[0];
  }

  int32(): number {
    return this.varint64()[0] | 0;
  }

  enum(): number {
    return this.int32();
  }

  uint64(): bigint {
    const [lo, hi] = this.varint64();
    return (BigInt(hi) << 32n) | BigInt(lo);
  }

  int64(): bigint {
    return BigInt.asIntN(64, this.uint64());
  }

  sint32(): number {
    const lo = this.varint64()[0];
    return (lo >>> 1) ^ -(lo & 1);
  }

  sint64(): bigint {
    const v = this.uint64();
    return (v >> 1n) ^ -(v & 1n);
  }

  bool(): boolean {
    const [lo, hi] = this.varint64();
    return lo !== 0 || hi !== 0;
  }

  private need(n: number, what: string): number {
    if (this.end - this.pos < n) throw new ChannelProtocolError('protobuf-truncated', what);
    const at = this.pos;
    this.pos += n;
    return at;
  }

  private dataView(at: number, n: number): DataView {
    return new DataView(this.buf.buffer, this.buf.byteOffset + at, n);
  }

  fixed32(): number {
    return this.dataView(this.need(4, 'fixed32'), 4).getUint32(0, true);
  }

  sfixed32(): number {
    return this.dataView(this.need(4, 'sfixed32'), 4).getInt32(0, true);
  }

  float(): number {
    return this.dataView(this.need(4, 'float'), 4).getFloat32(0, true);
  }

  fixed64(): bigint {
    return this.dataView(this.need(8, 'fixed64'), 8).getBigUint64(0, true);
  }

  sfixed64(): bigint {
    return this.dataView(this.need(8, 'sfixed64'), 8).getBigInt64(0, true);
  }

  double(): number {
    return this.dataView(this.need(8, 'double'), 8).getFloat64(0, true);
  }

  /** A length-delimited value as a view into the input. */
  bytesView(): Uint8Array {
    const [lo, hi] = this.varint64();
    if (hi !== 0 || lo > this.end - this.pos) throw new ChannelProtocolError('protobuf-truncated', 'length-delimited');
    const at = this.need(lo, 'length-delimited');
    return this.buf.subarray(at, at + lo);
  }

  /** A length-delimited value, copied so the result does not keep the input alive. */
  bytes(): Uint8Array {
    return this.bytesView().slice();
  }

  string(): string {
    return fromUtf8(this.bytesView(), 'protobuf-invalid-utf8');
  }

  /** A reader over a length-delimited sub-message, one level deeper. */
  nested(): ProtoReader {
    return this.sub(this.bytesView());
  }

  /** A reader over `bytes` one level deeper than this one (same limits). */
  sub(bytes: Uint8Array): ProtoReader {
    return new ProtoReader(bytes, { maxDepth: this.maxDepth }, this.depth + 1);
  }

  /** Skips the value of a field whose tag was just read (protowire.ConsumeFieldValue). */
  skip(wireType: WireType, fieldNumber: number): void {
    switch (wireType) {
      case WireType.Varint:
        this.varint64();
        return;
      case WireType.Fixed64:
        this.need(8, 'fixed64');
        return;
      case WireType.Fixed32:
        this.need(4, 'fixed32');
        return;
      case WireType.LengthDelimited:
        this.bytesView();
        return;
      case WireType.StartGroup:
        this.skipGroup(fieldNumber);
        return;
      case WireType.EndGroup:
        throw new ChannelProtocolError('protobuf-group', `unexpected end of group ${fieldNumber}`);
    }
  }

  private skipGroup(fieldNumber: number): void {
    // Iterative, with an explicit stack of open group numbers, so hostile nesting costs no call stack.
    const open = [fieldNumber];
    while (open.length > 0) {
      if (this.depth + open.length > this.maxDepth) {
        throw new ChannelProtocolError('protobuf-depth', `groups nested deeper than ${this.maxDepth}`);
      }
      if (this.done) throw new ChannelProtocolError('protobuf-truncated', `group ${open[open.length - 1]} not closed`);
      const tag = this.tag();
      if (tag.wireType === WireType.EndGroup) {
        if (tag.fieldNumber !== open[open.length - 1]) {
          throw new ChannelProtocolError(
            'protobuf-group',
            `end of group ${tag.fieldNumber} inside group ${open.at(-1)}`,
          );
        }
        open.pop();
      } else if (tag.wireType === WireType.StartGroup) {
        open.push(tag.fieldNumber);
      } else {
        this.skip(tag.wireType, tag.fieldNumber);
      }
    }
  }
}

/** A growable buffer of proto3 wire data. Field writers take the field number; raw writers do not write a tag. */
export class ProtoWriter {
  private buf = new Uint8Array(64);
  private len = 0;

  get length(): number {
    return this.len;
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  rawByte(b: number): this {
    this.reserve(1);
    this.buf[this.len++] = b;
    return this;
  }

  rawBytes(bytes: Uint8Array): this {
    this.reserve(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
    return this;
  }

  tag(fieldNumber: number, wireType: WireType): this {
    if (!Number.isInteger(fieldNumber) || fieldNumber < 1 || fieldNumber > MAX_FIELD_NUMBER) {
      throw new ChannelProtocolError('invalid-message', `field number ${fieldNumber}`);
    }
    return this.varint32(((fieldNumber << 3) | wireType) >>> 0);
  }

  /** An unsigned 32-bit varint. */
  varint32(value: number): this {
    this.reserve(5);
    let v = value >>> 0;
    while (v > 0x7f) {
      this.buf[this.len++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.len++] = v;
    return this;
  }

  /** An unsigned 64-bit varint from its low and high halves. */
  varint64(lo: number, hi: number): this {
    this.reserve(10);
    let l = lo >>> 0;
    let h = hi >>> 0;
    while (h > 0 || l > 0x7f) {
      this.buf[this.len++] = (l & 0x7f) | 0x80;
      l = ((l >>> 7) | (h << 25)) >>> 0;
      h >>>= 7;
    }
    this.buf[this.len++] = l;
    return this;
  }

  uint32(value: number): this {
    return this.varint32(value);
  }

  /** Negative int32 values are sign-extended to ten bytes, as protowire does. */
  int32(value: number): this {
    return value < 0 ? this.varint64(value >>> 0, 0xffffffff) : this.varint32(value);
  }

  enum(value: number): this {
    return this.int32(value);
  }

  uint64(value: bigint): this {
    const v = BigInt.asUintN(64, value);
    return this.varint64(Number(v & 0xffffffffn), Number(v >> 32n));
  }

  int64(value: bigint): this {
    return this.uint64(value);
  }

  sint32(value: number): this {
    return this.varint32(((value << 1) ^ (value >> 31)) >>> 0);
  }

  sint64(value: bigint): this {
    const v = BigInt.asIntN(64, value);
    return this.uint64(BigInt.asUintN(64, (v << 1n) ^ (v >> 63n)));
  }

  bool(value: boolean): this {
    return this.rawByte(value ? 1 : 0);
  }

  private fixed(n: number, write: (dv: DataView) => void): this {
    this.reserve(n);
    write(new DataView(this.buf.buffer, this.buf.byteOffset + this.len, n));
    this.len += n;
    return this;
  }

  fixed32(value: number): this {
    return this.fixed(4, (dv) => dv.setUint32(0, value >>> 0, true));
  }

  sfixed32(value: number): this {
    return this.fixed(4, (dv) => dv.setInt32(0, value | 0, true));
  }

  float(value: number): this {
    return this.fixed(4, (dv) => dv.setFloat32(0, value, true));
  }

  fixed64(value: bigint): this {
    return this.fixed(8, (dv) => dv.setBigUint64(0, BigInt.asUintN(64, value), true));
  }

  sfixed64(value: bigint): this {
    return this.fixed(8, (dv) => dv.setBigInt64(0, BigInt.asIntN(64, value), true));
  }

  double(value: number): this {
    return this.fixed(8, (dv) => dv.setFloat64(0, value, true));
  }

  bytes(value: Uint8Array): this {
    if (value.length > 0x7fffffff) throw new ChannelProtocolError('invalid-message', 'length-delimited over 2 GiB');
    return this.varint32(value.length).rawBytes(value);
  }

  string(value: string): this {
    return this.bytes(utf8(value));
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}
