/**
 * Declarative proto3 message types over the wire reader/writer. A message is declared once as a TypeScript
 * interface plus a field table keyed by property name; the table's types must match the interface, so the two
 * cannot drift. Encoding follows google.golang.org/protobuf's proto3 rules so our bytes equal the reference's
 * (with `Deterministic`): singular scalars at their zero value are omitted, repeated numerics are packed, map
 * entries always carry key and value and are ordered by key, sub-messages are written when present even if empty.
 */
import { assertWellFormed, compareBytes, concatBytes, utf8 } from '../bytes.ts';
import { ChannelProtocolError } from '../errors.ts';
import {
  DEFAULT_PROTO_MAX_BYTES,
  DEFAULT_PROTO_MAX_DEPTH,
  ProtoReader,
  type ProtoReaderOptions,
  ProtoWriter,
  WireType,
} from '../protobuf.ts';

export type ScalarType =
  | 'double'
  | 'float'
  | 'int32'
  | 'uint32'
  | 'sint32'
  | 'fixed32'
  | 'sfixed32'
  | 'int64'
  | 'uint64'
  | 'sint64'
  | 'fixed64'
  | 'sfixed64'
  | 'bool'
  | 'string'
  | 'bytes'
  | 'enum';

export type MapKeyType = Exclude<ScalarType, 'double' | 'float' | 'bytes' | 'enum'>;

type Int64Type = 'int64' | 'uint64' | 'sint64' | 'fixed64' | 'sfixed64';

export type ScalarValue<S extends ScalarType> = S extends Int64Type
  ? bigint
  : S extends 'bool'
    ? boolean
    : S extends 'string'
      ? string
      : S extends 'bytes'
        ? Uint8Array
        : number;

export type FieldShape =
  | { kind: 'scalar'; type: ScalarType }
  | { kind: 'repeated'; type: ScalarType }
  | { kind: 'message'; type: MessageType<object> }
  | { kind: 'repeatedMessage'; type: MessageType<object> }
  | { kind: 'map'; key: MapKeyType; value: ScalarType }
  | { kind: 'messageMap'; key: MapKeyType; value: MessageType<object> };

/** A field's number and shape; `T` is the property type it decodes to (phantom, invariant). */
export interface FieldDef<T> {
  readonly no: number;
  readonly shape: FieldShape;
  readonly _type?: (value: T) => T;
}

export interface FieldInfo {
  readonly name: string;
  readonly no: number;
  readonly shape: FieldShape;
}

export interface DecodeOptions extends ProtoReaderOptions {
  /**
   * Bound on decoded elements (sub-messages, repeated items, map entries) per decode. Two wire bytes can make an
   * empty sub-message, so without it a 16 MiB body could become millions of objects.
   */
  maxElements?: number;
}

export const DEFAULT_PROTO_MAX_ELEMENTS = 262_144;

export interface MessageType<T> {
  readonly typeName: string;
  readonly fields: readonly FieldInfo[];
  /** The channel content type the reference sends this message with (its GetContentType), if any. */
  readonly contentType: number | undefined;
  /** A value with every field at its proto3 default (sub-messages absent). */
  create(init?: Partial<T>): T;
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array, options?: DecodeOptions): T;
  /** @internal decode within an outer decode's limits. */
  decodeWith(reader: ProtoReader, ctx: DecodeContext): T;
}

export interface DecodeContext {
  elements: number;
  readonly maxElements: number;
}

const def = <T>(no: number, shape: FieldShape): FieldDef<T> => ({ no, shape });

export const field = {
  scalar: <S extends ScalarType>(no: number, type: S): FieldDef<ScalarValue<S>> => def(no, { kind: 'scalar', type }),
  string: (no: number): FieldDef<string> => def(no, { kind: 'scalar', type: 'string' }),
  bytes: (no: number): FieldDef<Uint8Array> => def(no, { kind: 'scalar', type: 'bytes' }),
  bool: (no: number): FieldDef<boolean> => def(no, { kind: 'scalar', type: 'bool' }),
  uint32: (no: number): FieldDef<number> => def(no, { kind: 'scalar', type: 'uint32' }),
  int32: (no: number): FieldDef<number> => def(no, { kind: 'scalar', type: 'int32' }),
  uint64: (no: number): FieldDef<bigint> => def(no, { kind: 'scalar', type: 'uint64' }),
  int64: (no: number): FieldDef<bigint> => def(no, { kind: 'scalar', type: 'int64' }),
  /** Proto3 enums are open: any int32 decodes, so the property is a number. */
  enum: (no: number): FieldDef<number> => def(no, { kind: 'scalar', type: 'enum' }),
  repeated: <S extends ScalarType>(no: number, type: S): FieldDef<ScalarValue<S>[]> =>
    def(no, { kind: 'repeated', type }),
  /** A singular sub-message: an optional property, absent when not on the wire. */
  message: <T extends object>(no: number, type: MessageType<T>): FieldDef<T | undefined> =>
    def(no, { kind: 'message', type: type as unknown as MessageType<object> }),
  repeatedMessage: <T extends object>(no: number, type: MessageType<T>): FieldDef<T[]> =>
    def(no, { kind: 'repeatedMessage', type: type as unknown as MessageType<object> }),
  map: <K extends MapKeyType, V extends ScalarType>(
    no: number,
    key: K,
    value: V,
  ): FieldDef<Map<ScalarValue<K>, ScalarValue<V>>> => def(no, { kind: 'map', key, value }),
  messageMap: <K extends MapKeyType, T extends object>(
    no: number,
    key: K,
    value: MessageType<T>,
  ): FieldDef<Map<ScalarValue<K>, T>> =>
    def(no, { kind: 'messageMap', key, value: value as unknown as MessageType<object> }),
};

export type FieldTable<T> = { [K in keyof T]-?: FieldDef<T[K]> };

function wireTypeOf(type: ScalarType): WireType {
  switch (type) {
    case 'double':
    case 'fixed64':
    case 'sfixed64':
      return WireType.Fixed64;
    case 'float':
    case 'fixed32':
    case 'sfixed32':
      return WireType.Fixed32;
    case 'string':
    case 'bytes':
      return WireType.LengthDelimited;
    default:
      return WireType.Varint;
  }
}

function defaultOf(type: ScalarType): unknown {
  switch (type) {
    case 'string':
      return '';
    case 'bytes':
      return new Uint8Array(0);
    case 'bool':
      return false;
    case 'int64':
    case 'uint64':
    case 'sint64':
    case 'fixed64':
    case 'sfixed64':
      return 0n;
    default:
      return 0;
  }
}

function isZero(type: ScalarType, value: unknown): boolean {
  switch (type) {
    case 'string':
      return value === '';
    case 'bytes':
      return (value as Uint8Array).length === 0;
    case 'bool':
      return value === false;
    case 'double':
    case 'float':
      // protobuf-go omits +0 only: -0 has its sign bit set and is written.
      return Object.is(value, 0);
    default:
      return value === 0 || value === 0n;
  }
}

function invalid(where: string, detail: string): never {
  throw new ChannelProtocolError('invalid-message', `${where}: ${detail}`);
}

const INT_RANGES: Partial<Record<ScalarType, [number, number]>> = {
  int32: [-0x80000000, 0x7fffffff],
  sint32: [-0x80000000, 0x7fffffff],
  sfixed32: [-0x80000000, 0x7fffffff],
  enum: [-0x80000000, 0x7fffffff],
  uint32: [0, 0xffffffff],
  fixed32: [0, 0xffffffff],
};

function checkScalar(type: ScalarType, value: unknown, where: string): void {
  switch (type) {
    case 'string':
      if (typeof value !== 'string') invalid(where, 'expected a string');
      assertWellFormed(value, where);
      return;
    case 'bytes':
      if (!(value instanceof Uint8Array)) invalid(where, 'expected bytes');
      return;
    case 'bool':
      if (typeof value !== 'boolean') invalid(where, 'expected a boolean');
      return;
    case 'double':
    case 'float':
      if (typeof value !== 'number') invalid(where, 'expected a number');
      return;
    case 'int64':
    case 'sint64':
    case 'sfixed64':
      if (typeof value !== 'bigint' || BigInt.asIntN(64, value) !== value) invalid(where, 'expected an int64 bigint');
      return;
    case 'uint64':
    case 'fixed64':
      if (typeof value !== 'bigint' || BigInt.asUintN(64, value) !== value) invalid(where, 'expected a uint64 bigint');
      return;
    default: {
      const [min, max] = INT_RANGES[type]!;
      if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
        invalid(where, `expected a ${type}`);
      }
    }
  }
}

function writeScalarValue(w: ProtoWriter, type: ScalarType, value: unknown): void {
  switch (type) {
    case 'double':
      w.double(value as number);
      return;
    case 'float':
      w.float(value as number);
      return;
    case 'int32':
      w.int32(value as number);
      return;
    case 'enum':
      w.enum(value as number);
      return;
    case 'uint32':
      w.uint32(value as number);
      return;
    case 'sint32':
      w.sint32(value as number);
      return;
    case 'fixed32':
      w.fixed32(value as number);
      return;
    case 'sfixed32':
      w.sfixed32(value as number);
      return;
    case 'int64':
      w.int64(value as bigint);
      return;
    case 'uint64':
      w.uint64(value as bigint);
      return;
    case 'sint64':
      w.sint64(value as bigint);
      return;
    case 'fixed64':
      w.fixed64(value as bigint);
      return;
    case 'sfixed64':
      w.sfixed64(value as bigint);
      return;
    case 'bool':
      w.bool(value as boolean);
      return;
    case 'string':
      w.string(value as string);
      return;
    case 'bytes':
      w.bytes(value as Uint8Array);
      return;
  }
}

function readScalarValue(r: ProtoReader, type: ScalarType): unknown {
  switch (type) {
    case 'double':
      return r.double();
    case 'float':
      return r.float();
    case 'int32':
      return r.int32();
    case 'enum':
      return r.enum();
    case 'uint32':
      return r.uint32();
    case 'sint32':
      return r.sint32();
    case 'fixed32':
      return r.fixed32();
    case 'sfixed32':
      return r.sfixed32();
    case 'int64':
      return r.int64();
    case 'uint64':
      return r.uint64();
    case 'sint64':
      return r.sint64();
    case 'fixed64':
      return r.fixed64();
    case 'sfixed64':
      return r.sfixed64();
    case 'bool':
      return r.bool();
    case 'string':
      return r.string();
    case 'bytes':
      return r.bytes();
  }
}

function expectWireType(actual: WireType, expected: WireType, where: string): void {
  // protobuf-go would keep a mistyped known field as an unknown field; no reference encoder produces one.
  if (actual !== expected) {
    throw new ChannelProtocolError('protobuf-wire-type', `${where}: wire type ${actual}, expected ${expected}`);
  }
}

function countElement(ctx: DecodeContext): void {
  if (++ctx.elements > ctx.maxElements) {
    throw new ChannelProtocolError('protobuf-too-large', `more than ${ctx.maxElements} decoded elements`);
  }
}

/** Orders map keys as protobuf-go's deterministic marshal does (mapsort): numerically, strings bytewise. */
function sortedEntries(map: Map<unknown, unknown>, key: MapKeyType): [unknown, unknown][] {
  const entries = [...map.entries()];
  if (key === 'string') {
    const encoded = new Map(entries.map(([k]) => [k, utf8(k as string)]));
    return entries.sort(([a], [b]) => compareBytes(encoded.get(a)!, encoded.get(b)!));
  }
  if (key === 'bool') return entries.sort(([a], [b]) => Number(a) - Number(b));
  return entries.sort(([a], [b]) => ((a as number | bigint) < (b as number | bigint) ? -1 : a === b ? 0 : 1));
}

class MessageTypeImpl<T extends object> implements MessageType<T> {
  readonly fields: readonly FieldInfo[];
  private readonly byNumber = new Map<number, FieldInfo>();

  constructor(
    readonly typeName: string,
    table: FieldTable<T>,
    readonly contentType: number | undefined,
  ) {
    this.fields = Object.entries(table as Record<string, FieldDef<unknown>>)
      .map(([name, f]) => ({ name, no: f.no, shape: f.shape }))
      .sort((a, b) => a.no - b.no);
    for (const f of this.fields) {
      if (this.byNumber.has(f.no)) throw new Error(`${typeName}: field number ${f.no} used twice`);
      this.byNumber.set(f.no, f);
    }
  }

  create(init: Partial<T> = {}): T {
    const out: Record<string, unknown> = {};
    for (const f of this.fields) {
      switch (f.shape.kind) {
        case 'scalar':
          out[f.name] = defaultOf(f.shape.type);
          break;
        case 'repeated':
        case 'repeatedMessage':
          out[f.name] = [];
          break;
        case 'map':
        case 'messageMap':
          out[f.name] = new Map();
          break;
        case 'message':
          break;
      }
    }
    for (const [k, v] of Object.entries(init)) if (v !== undefined) out[k] = v;
    return out as T;
  }

  encode(value: T): Uint8Array {
    const w = new ProtoWriter();
    this.encodeTo(w, value);
    return w.finish();
  }

  private encodeTo(w: ProtoWriter, value: T): void {
    if (typeof value !== 'object' || value === null) invalid(this.typeName, 'expected an object');
    const record = value as Record<string, unknown>;
    for (const f of this.fields) {
      const v = record[f.name];
      const where = `${this.typeName}.${f.name}`;
      const shape = f.shape;
      switch (shape.kind) {
        case 'scalar': {
          if (v === undefined) break;
          checkScalar(shape.type, v, where);
          if (isZero(shape.type, v)) break;
          w.tag(f.no, wireTypeOf(shape.type));
          writeScalarValue(w, shape.type, v);
          break;
        }
        case 'repeated': {
          if (v === undefined) break;
          if (!Array.isArray(v)) invalid(where, 'expected an array');
          if (v.length === 0) break;
          for (const item of v) checkScalar(shape.type, item, where);
          const wt = wireTypeOf(shape.type);
          if (wt === WireType.LengthDelimited) {
            for (const item of v) {
              w.tag(f.no, wt);
              writeScalarValue(w, shape.type, item);
            }
          } else {
            const packed = new ProtoWriter();
            for (const item of v) writeScalarValue(packed, shape.type, item);
            w.tag(f.no, WireType.LengthDelimited).bytes(packed.finish());
          }
          break;
        }
        case 'message': {
          if (v === undefined || v === null) break;
          w.tag(f.no, WireType.LengthDelimited).bytes(shape.type.encode(v as object));
          break;
        }
        case 'repeatedMessage': {
          if (v === undefined) break;
          if (!Array.isArray(v)) invalid(where, 'expected an array');
          for (const item of v) w.tag(f.no, WireType.LengthDelimited).bytes(shape.type.encode(item as object));
          break;
        }
        case 'map':
        case 'messageMap': {
          if (v === undefined) break;
          if (!(v instanceof Map)) invalid(where, 'expected a Map');
          for (const [key, val] of sortedEntries(v, shape.key)) {
            checkScalar(shape.key, key, `${where} key`);
            const entry = new ProtoWriter();
            entry.tag(1, wireTypeOf(shape.key));
            writeScalarValue(entry, shape.key, key);
            if (shape.kind === 'map') {
              checkScalar(shape.value, val, `${where} value`);
              entry.tag(2, wireTypeOf(shape.value));
              writeScalarValue(entry, shape.value, val);
            } else {
              entry.tag(2, WireType.LengthDelimited).bytes(shape.value.encode(val as object));
            }
            w.tag(f.no, WireType.LengthDelimited).bytes(entry.finish());
          }
          break;
        }
      }
    }
  }

  decode(bytes: Uint8Array, options: DecodeOptions = {}): T {
    const reader = new ProtoReader(bytes, {
      maxDepth: options.maxDepth ?? DEFAULT_PROTO_MAX_DEPTH,
      maxBytes: options.maxBytes ?? DEFAULT_PROTO_MAX_BYTES,
    });
    return this.decodeWith(reader, { elements: 0, maxElements: options.maxElements ?? DEFAULT_PROTO_MAX_ELEMENTS });
  }

  decodeWith(r: ProtoReader, ctx: DecodeContext): T {
    const out = this.create() as Record<string, unknown>;
    // protobuf-go merges repeated occurrences of a singular sub-message; merging equals decoding the concatenation.
    let pendingMessages: Map<FieldInfo, Uint8Array[]> | undefined;
    while (!r.done) {
      const { fieldNumber, wireType } = r.tag();
      const f = this.byNumber.get(fieldNumber);
      if (f === undefined) {
        r.skip(wireType, fieldNumber);
        continue;
      }
      const where = `${this.typeName}.${f.name}`;
      const shape = f.shape;
      switch (shape.kind) {
        case 'scalar':
          expectWireType(wireType, wireTypeOf(shape.type), where);
          out[f.name] = readScalarValue(r, shape.type);
          break;
        case 'repeated': {
          const list = out[f.name] as unknown[];
          const wt = wireTypeOf(shape.type);
          if (wireType === WireType.LengthDelimited && wt !== WireType.LengthDelimited) {
            // Packed; protobuf-go accepts packed and unpacked encodings of a repeated numeric alike.
            const packed = r.nested();
            while (!packed.done) {
              countElement(ctx);
              list.push(readScalarValue(packed, shape.type));
            }
          } else {
            expectWireType(wireType, wt, where);
            countElement(ctx);
            list.push(readScalarValue(r, shape.type));
          }
          break;
        }
        case 'message': {
          expectWireType(wireType, WireType.LengthDelimited, where);
          pendingMessages ??= new Map();
          const chunks = pendingMessages.get(f) ?? [];
          chunks.push(r.bytesView());
          pendingMessages.set(f, chunks);
          break;
        }
        case 'repeatedMessage': {
          expectWireType(wireType, WireType.LengthDelimited, where);
          countElement(ctx);
          (out[f.name] as unknown[]).push(shape.type.decodeWith(r.nested(), ctx));
          break;
        }
        case 'map':
        case 'messageMap': {
          expectWireType(wireType, WireType.LengthDelimited, where);
          countElement(ctx);
          const [key, value] = this.decodeMapEntry(r.nested(), shape, where, ctx);
          // protobuf-go: a repeated key keeps the last entry.
          (out[f.name] as Map<unknown, unknown>).set(key, value);
          break;
        }
      }
    }
    if (pendingMessages) {
      for (const [f, chunks] of pendingMessages) {
        const type = (f.shape as { type: MessageType<object> }).type;
        countElement(ctx);
        out[f.name] = type.decodeWith(r.sub(concatBytes(chunks)), ctx);
      }
    }
    return out as T;
  }

  private decodeMapEntry(
    r: ProtoReader,
    shape: Extract<FieldShape, { kind: 'map' | 'messageMap' }>,
    where: string,
    ctx: DecodeContext,
  ): [unknown, unknown] {
    let key: unknown = defaultOf(shape.key);
    let value: unknown = shape.kind === 'map' ? defaultOf(shape.value) : undefined;
    const valueChunks: Uint8Array[] = [];
    while (!r.done) {
      const { fieldNumber, wireType } = r.tag();
      if (fieldNumber === 1) {
        expectWireType(wireType, wireTypeOf(shape.key), `${where} key`);
        key = readScalarValue(r, shape.key);
      } else if (fieldNumber === 2) {
        if (shape.kind === 'map') {
          expectWireType(wireType, wireTypeOf(shape.value), `${where} value`);
          value = readScalarValue(r, shape.value);
        } else {
          expectWireType(wireType, WireType.LengthDelimited, `${where} value`);
          valueChunks.push(r.bytesView());
        }
      } else {
        r.skip(wireType, fieldNumber);
      }
    }
    if (shape.kind === 'messageMap') {
      // A missing value is the message type's zero value, as in protobuf-go.
      value = shape.value.decodeWith(r.sub(concatBytes(valueChunks)), ctx);
    }
    return [key, value];
  }
}

export function defineMessage<T extends object>(
  typeName: string,
  table: FieldTable<T>,
  contentType?: number,
): MessageType<T> {
  return new MessageTypeImpl<T>(typeName, table, contentType);
}
