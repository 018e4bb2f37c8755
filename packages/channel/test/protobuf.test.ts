import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ctrl, edge, MAX_FIELD_NUMBER, ProtoReader, ProtoWriter, WireType } from '../src/index.ts';
import { expectProtocolError, fromHex, goReference, onlyProtocolErrors, toHex } from './helpers.ts';

const write = (fn: (w: ProtoWriter) => void): string => {
  const w = new ProtoWriter();
  fn(w);
  return toHex(w.finish());
};

describe('varints', () => {
  it('encode by the base-128 rule', () => {
    expect(write((w) => w.uint32(0))).toBe('00');
    expect(write((w) => w.uint32(1))).toBe('01');
    expect(write((w) => w.uint32(300))).toBe('ac02');
    expect(write((w) => w.uint32(0xffffffff))).toBe('ffffffff0f');
    expect(write((w) => w.uint64(2n ** 64n - 1n))).toBe('ffffffffffffffffff01');
    expect(write((w) => w.uint64(9999000000n))).toBe('c0c3f29f25');
    // negative int32 sign-extends to ten bytes (protowire AppendVarint(uint64(int64(v))))
    expect(write((w) => w.int32(-1))).toBe('ffffffffffffffffff01');
    expect(write((w) => w.int64(-2n))).toBe('feffffffffffffffff01');
    expect(write((w) => w.sint32(-1))).toBe('01');
    expect(write((w) => w.sint64(-2n))).toBe('03');
  });

  it('round-trip every width', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        (u64, i32, i64) => {
          const w = new ProtoWriter()
            .uint64(u64)
            .int32(i32)
            .int64(i64)
            .sint32(i32)
            .sint64(i64)
            .uint32(i32 >>> 0);
          const r = new ProtoReader(w.finish());
          expect(r.uint64()).toBe(u64);
          expect(r.int32()).toBe(i32);
          expect(r.int64()).toBe(i64);
          expect(r.sint32()).toBe(i32);
          expect(r.sint64()).toBe(i64);
          expect(r.uint32()).toBe(i32 >>> 0);
          expect(r.done).toBe(true);
        },
      ),
    );
  });

  it('truncate to 32 bits for int32/uint32 fields, as protobuf-go does', () => {
    expect(new ProtoReader(fromHex('ffffffff0f')).int32()).toBe(-1);
    expect(new ProtoReader(fromHex('8580808010')).uint32()).toBe(5);
    expect(goReference.facts['pbread.int32-negative-5byte']).toBe('ok: {"port":-1}');
    expect(edge.Address.decode(fromHex('c002ffffffff0f')).port).toBe(-1);
    expect(goReference.facts['pbread.uint32-from-big-varint']).toBe('ok: {"cost":5}');
    expect(edge.CreateTerminatorV2Request.decode(fromHex('288580808010')).cost).toBe(5);
  });

  it('reject an 11th byte or a 10th byte above 1 (protowire errCodeOverflow)', () => {
    expect(goReference.facts['pbread.varint-10th-byte-2']).toContain('invalid wire-format');
    expect(goReference.facts['pbread.varint-11-bytes']).toContain('invalid wire-format');
    expectProtocolError(() => new ProtoReader(fromHex('ffffffffffffffffff02')).uint64(), 'protobuf-varint-overflow');
    expectProtocolError(() => new ProtoReader(fromHex('ffffffffffffffffff8001')).uint64(), 'protobuf-varint-overflow');
    expectProtocolError(() => ctrl.Unroute.decode(fromHex('10ffffffffffffffffff02')), 'protobuf-varint-overflow');
    expect(new ProtoReader(fromHex('8000')).uint32()).toBe(0);
  });

  it('reject truncation', () => {
    expectProtocolError(() => new ProtoReader(fromHex('80')).uint32(), 'protobuf-truncated');
    expectProtocolError(() => new ProtoReader(fromHex('')).uint32(), 'protobuf-truncated');
    expectProtocolError(() => new ProtoReader(fromHex('0102')).fixed32(), 'protobuf-truncated');
    expectProtocolError(() => new ProtoReader(fromHex('05616263')).bytes(), 'protobuf-truncated');
    expectProtocolError(() => new ProtoReader(fromHex('ffffffffffffffff7f')).bytes(), 'protobuf-truncated');
  });
});

describe('fixed and floating values', () => {
  it('are little-endian', () => {
    expect(write((w) => w.fixed32(1))).toBe('01000000');
    expect(write((w) => w.sfixed64(-1n))).toBe('ffffffffffffffff');
    expect(write((w) => w.double(1))).toBe('000000000000f03f');
    const r = new ProtoReader(fromHex('01000000 ffffffffffffffff 000000000000f03f 0000803f'));
    expect(r.fixed32()).toBe(1);
    expect(r.sfixed64()).toBe(-1n);
    expect(r.double()).toBe(1);
    expect(r.float()).toBe(1);
  });
});

describe('tags', () => {
  it('reject field number 0, above 2^29-1, and wire types 6 and 7', () => {
    expect(goReference.facts['pbread.field-number-0']).toContain('invalid wire-format');
    expectProtocolError(() => new ProtoReader(fromHex('00')).tag(), 'protobuf-field-number');
    expectProtocolError(() => new ProtoReader(fromHex('8080808010')).tag(), 'protobuf-field-number');
    expect(new ProtoReader(new ProtoWriter().tag(MAX_FIELD_NUMBER, WireType.Varint).finish()).tag()).toEqual({
      fieldNumber: MAX_FIELD_NUMBER,
      wireType: 0,
    });
    expectProtocolError(() => new ProtoReader(fromHex('0e')).tag(), 'protobuf-wire-type');
    expectProtocolError(() => new ProtoReader(fromHex('0f')).tag(), 'protobuf-wire-type');
  });
});

describe('skipping unknown fields', () => {
  it('skips every wire type, including groups (protowire.ConsumeFieldValue)', () => {
    expect(goReference.facts['pbread.unknown-group']).toBe('ok: {"circuitId":"a"}');
    // unknown field 9 start-group { field 1 varint 1; field 2 "a" } end-group, then circuitId "a"
    expect(ctrl.Unroute.decode(fromHex('4b 0801 120161 4c 0a0161')).circuitId).toBe('a');
    // unknown fields 9 (varint), 10 (fixed64), 11 (bytes), 12 (fixed32)
    expect(ctrl.Unroute.decode(fromHex('4801 510102030405060708 5a0100 6501020304 1001')).now).toBe(true);
  });

  it('rejects a known field with the wrong wire type (protobuf-go would keep it as unknown)', () => {
    expect(goReference.facts['pbread.wire-type-mismatch']).toBe('ok: {}');
    expectProtocolError(() => ctrl.Unroute.decode(fromHex('0801')), 'protobuf-wire-type');
    expectProtocolError(() => ctrl.Unroute.decode(fromHex('0b 0c')), 'protobuf-wire-type');
  });

  it('rejects an end-group that was never opened, or a group that ends as another', () => {
    expect(goReference.facts['pbread.end-group-top']).toContain('invalid wire-format');
    expectProtocolError(() => ctrl.Unroute.decode(fromHex('4c')), 'protobuf-group');
    expectProtocolError(() => ctrl.Unroute.decode(fromHex('1b 24')), 'protobuf-group');
    expectProtocolError(() => ctrl.Unroute.decode(fromHex('1b 0801')), 'protobuf-truncated');
  });

  it('bounds group nesting without using the call stack', () => {
    const deep = new Uint8Array(200_000).fill(0x1b); // field 3 start-group, forever
    expectProtocolError(() => ctrl.Unroute.decode(deep), 'protobuf-depth');
    const nested = Uint8Array.from([...new Array<number>(20).fill(0x1b), ...new Array<number>(20).fill(0x1c)]);
    expect(ctrl.Unroute.decode(nested)).toEqual(ctrl.Unroute.create());
    expectProtocolError(() => ctrl.Unroute.decode(nested, { maxDepth: 10 }), 'protobuf-depth');
  });
});

describe('strings', () => {
  it('must be valid UTF-8 (protobuf-go checks proto3 strings)', () => {
    expect(goReference.facts['pbread.string-invalid-utf8']).toContain('invalid UTF-8');
    expectProtocolError(() => ctrl.Unroute.decode(fromHex('0a02fffe')), 'protobuf-invalid-utf8');
  });
});

describe('hostile readers', () => {
  it('any bytes through every reader method yield values or ChannelProtocolError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.array(fc.nat(14), { maxLength: 20 }), (bytes, ops) => {
        const r = new ProtoReader(bytes);
        onlyProtocolErrors(() => {
          for (const op of ops) {
            if (r.done) return;
            switch (op) {
              case 0: {
                const t = r.tag();
                r.skip(t.wireType, t.fieldNumber);
                break;
              }
              case 1:
                r.uint64();
                break;
              case 2:
                r.int32();
                break;
              case 3:
                r.fixed32();
                break;
              case 4:
                r.fixed64();
                break;
              case 5:
                r.double();
                break;
              case 6:
                r.bytes();
                break;
              case 7:
                r.string();
                break;
              case 8:
                r.nested();
                break;
              case 9:
                r.sint64();
                break;
              case 10:
                r.bool();
                break;
              case 11:
                r.float();
                break;
              case 12:
                r.sfixed32();
                break;
              default:
                r.tag();
            }
          }
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses input over maxBytes before reading it', () => {
    expectProtocolError(() => new ProtoReader(new Uint8Array(11), { maxBytes: 10 }), 'protobuf-too-large');
  });
});
