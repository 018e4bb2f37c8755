import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  boolHeader,
  byteHeader,
  capabilitiesHeader,
  ChannelHeader,
  ControllerCapability,
  createMessage,
  getHeader,
  type HeaderCodec,
  int32Header,
  int64Header,
  requireHeader,
  setHeader,
  stringHeader,
  stringMapHeader,
  stringSliceHeader,
  u32BytesMapHeader,
  uint16Header,
  uint32Header,
  uint64Header,
  versionHeader,
} from '../src/index.ts';
import { expectProtocolError, fromHex, goReference, onlyProtocolErrors, toHex } from './helpers.ts';

const hexOf = <T>(codec: HeaderCodec<T>, value: T): string => toHex(codec.encode(value));

describe('fixed-width headers (little-endian, channel message.go Put*Header)', () => {
  it('encode by hand-derived bytes', () => {
    expect(hexOf(int32Header, -2)).toBe('feffffff');
    expect(hexOf(uint32Header, 0x01020304)).toBe('04030201');
    expect(hexOf(uint16Header, 0x0102)).toBe('0201');
    expect(hexOf(uint64Header, 0x0102030405060708n)).toBe('0807060504030201');
    expect(hexOf(int64Header, -1n)).toBe('ffffffffffffffff');
    expect(hexOf(boolHeader, true)).toBe('01');
    expect(hexOf(boolHeader, false)).toBe('00');
    expect(hexOf(byteHeader, 4)).toBe('04');
  });

  it('decode only their exact width', () => {
    expectProtocolError(() => uint32Header.decode(Uint8Array.of(1, 2, 3)), 'invalid-header-value');
    expectProtocolError(() => uint64Header.decode(new Uint8Array(9)), 'invalid-header-value');
    expectProtocolError(() => int32Header.decode(new Uint8Array(0)), 'invalid-header-value');
    expectProtocolError(() => byteHeader.decode(new Uint8Array(0)), 'invalid-header-value');
  });

  it('read bools as GetBoolHeader does: only a first byte of 1 is true', () => {
    expect(boolHeader.decode(Uint8Array.of(1))).toBe(true);
    expect(boolHeader.decode(Uint8Array.of(1, 0))).toBe(true);
    expect(boolHeader.decode(Uint8Array.of(2))).toBe(false);
    expect(boolHeader.decode(new Uint8Array(0))).toBe(false);
  });

  it('refuse out-of-range values on encode', () => {
    expectProtocolError(() => uint32Header.encode(-1), 'invalid-message');
    expectProtocolError(() => int32Header.encode(2 ** 31), 'invalid-message');
    expectProtocolError(() => uint64Header.encode(-1n), 'invalid-message');
    expectProtocolError(() => int64Header.encode(2n ** 63n), 'invalid-message');
    expectProtocolError(() => byteHeader.encode(256), 'invalid-message');
  });

  it('round-trip', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        (i32, u32, u64, i64) => {
          expect(int32Header.decode(int32Header.encode(i32))).toBe(i32);
          expect(uint32Header.decode(uint32Header.encode(u32))).toBe(u32);
          expect(uint64Header.decode(uint64Header.encode(u64))).toBe(u64);
          expect(int64Header.decode(int64Header.encode(i64))).toBe(i64);
        },
      ),
    );
  });
});

describe('string headers', () => {
  it('are the raw UTF-8 bytes', () => {
    expect(hexOf(stringHeader, 'é')).toBe('c3a9');
    expect(stringHeader.decode(fromHex('c3a9'))).toBe('é');
  });

  it('refuse invalid UTF-8 and lone surrogates', () => {
    expectProtocolError(() => stringHeader.decode(Uint8Array.of(0xff)), 'invalid-header-value');
    expectProtocolError(() => stringHeader.encode('\ud800'), 'invalid-message');
  });
});

describe('string slices (EncodeStringSlice)', () => {
  it('match the reference bytes', () => {
    // count 3; "a"; "bc"; ""
    const byHand = '03000000' + '01000000 61' + '02000000 6263' + '00000000';
    expect(hexOf(stringSliceHeader, ['a', 'bc', ''])).toBe(toHex(fromHex(byHand)));
    expect(hexOf(stringSliceHeader, ['a', 'bc', ''])).toBe(goReference.hex['raw.string-slice']);
    expect(hexOf(stringSliceHeader, [])).toBe(goReference.hex['raw.string-slice-empty']);
    expect(stringSliceHeader.decode(new Uint8Array(0))).toEqual([]);
  });

  it('enforce the reference limits: 128 entries, 8192 bytes a string', () => {
    const many = new Uint8Array(4);
    new DataView(many.buffer).setUint32(0, 129, true);
    expectProtocolError(() => stringSliceHeader.decode(many), 'invalid-header-value');
    const long = fromHex('01000000 01200000');
    expectProtocolError(() => stringSliceHeader.decode(long), 'invalid-header-value');
    expectProtocolError(() => stringSliceHeader.encode(new Array<string>(129).fill('x')), 'invalid-message');
    expectProtocolError(() => stringSliceHeader.encode(['x'.repeat(8193)]), 'invalid-message');
  });

  it('refuse truncation, trailing bytes and invalid UTF-8 (the reference accepts the last two)', () => {
    expect(goReference.facts['strings.trailing-byte']).toBe('err=<nil>');
    expect(goReference.facts['strings.invalid-utf8']).toContain('err=<nil>');
    expectProtocolError(() => stringSliceHeader.decode(fromHex('010000')), 'invalid-header-value');
    expectProtocolError(() => stringSliceHeader.decode(fromHex('01000000 02000000 61')), 'invalid-header-value');
    expectProtocolError(() => stringSliceHeader.decode(fromHex('01000000 01000000 61 58')), 'invalid-header-value');
    expectProtocolError(() => stringSliceHeader.decode(fromHex('01000000 02000000 fffe')), 'invalid-header-value');
  });

  it('round-trip', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 20 }), { maxLength: 20 }), (values) => {
        expect(stringSliceHeader.decode(stringSliceHeader.encode(values))).toEqual(values);
      }),
    );
  });
});

describe('string maps (EncodeStringToStringMap)', () => {
  it('match the reference bytes', () => {
    const byHand = '01000000' + '09000000 736572766963654964' + '05000000 7376632d31';
    const map = new Map([['serviceId', 'svc-1']]);
    expect(hexOf(stringMapHeader, map)).toBe(toHex(fromHex(byHand)));
    expect(hexOf(stringMapHeader, map)).toBe(goReference.hex['raw.string-map-1']);
  });

  it('refuse repeated keys and truncated entries', () => {
    expectProtocolError(
      () => stringMapHeader.decode(fromHex('02000000 01000000 61 00000000 01000000 61 00000000')),
      'invalid-header-value',
    );
    expectProtocolError(() => stringMapHeader.decode(fromHex('01000000 01000000 61')), 'invalid-header-value');
  });

  it('round-trip', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string(), fc.string()), { maxLength: 10 }), (entries) => {
        const map = new Map(entries);
        expect(stringMapHeader.decode(stringMapHeader.encode(map))).toEqual(map);
      }),
    );
  });
});

describe('uint32 -> bytes maps (EncodeU32ToBytesMap, peer data)', () => {
  it('match the reference bytes', () => {
    const byHand = '01000000' + 'eb030000 03000000 010203';
    const map = new Map([[1003, Uint8Array.of(1, 2, 3)]]);
    expect(hexOf(u32BytesMapHeader, map)).toBe(toHex(fromHex(byHand)));
    expect(hexOf(u32BytesMapHeader, map)).toBe(goReference.hex['raw.u32-map-1']);
    expect(hexOf(u32BytesMapHeader, new Map([[7, new Uint8Array(0)]]))).toBe(
      goReference.hex['raw.u32-map-empty-value'],
    );
    expect(u32BytesMapHeader.decode(fromHex(goReference.hex['raw.u32-map-empty-value']!))).toEqual(
      new Map([[7, new Uint8Array(0)]]),
    );
  });

  it('refuse repeated keys (the reference keeps the last) and entries over 8192 bytes', () => {
    expect(goReference.facts['u32map.duplicate-key']).toContain('map[1:[187]]');
    expectProtocolError(
      () => u32BytesMapHeader.decode(fromHex('02000000 01000000 01000000 aa 01000000 01000000 bb')),
      'invalid-header-value',
    );
    expectProtocolError(() => u32BytesMapHeader.decode(fromHex('01000000 01000000 01200000')), 'invalid-header-value');
    expectProtocolError(() => u32BytesMapHeader.encode(new Map([[-1, Uint8Array.of()]])), 'invalid-message');
  });

  it('round-trip', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.uint8Array({ maxLength: 40 })), {
          maxLength: 10,
        }),
        (entries) => {
          const map = new Map(entries);
          expect(u32BytesMapHeader.decode(u32BytesMapHeader.encode(map))).toEqual(map);
        },
      ),
    );
  });
});

describe('capabilities (big.Int bytes)', () => {
  it('encode all three controller capabilities as 0x0e, as controller.go Run does', () => {
    const all = new Set(Object.values(ControllerCapability));
    expect(hexOf(capabilitiesHeader, all)).toBe('0e');
    expect(hexOf(capabilitiesHeader, all)).toBe(goReference.hex['raw.capabilities-all']);
    expect(hexOf(capabilitiesHeader, new Set())).toBe(goReference.hex['raw.capabilities-none']);
    expect(hexOf(capabilitiesHeader, new Set([1, 9]))).toBe(goReference.hex['raw.capabilities-1-9']);
  });

  it('decode big-endian, tolerating leading zeros like SetBytes', () => {
    expect(capabilitiesHeader.decode(Uint8Array.of(0x0e))).toEqual(new Set([1, 2, 3]));
    expect(capabilitiesHeader.decode(Uint8Array.of(0, 0, 2, 2))).toEqual(new Set([1, 9]));
    expect(capabilitiesHeader.decode(new Uint8Array(0))).toEqual(new Set());
  });

  it('round-trip', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 200 })), (bits) => {
        expect(capabilitiesHeader.decode(capabilitiesHeader.encode(new Set(bits)))).toEqual(new Set(bits));
      }),
    );
  });
});

describe('version header (versions.StdVersionEncDec)', () => {
  const info = { version: 'v1.1.9', revision: 'abc123', buildDate: '2024-08-01 12:00:00', os: 'linux', arch: 'amd64' };

  it('is version|revision|buildDate|os|arch', () => {
    expect(Buffer.from(versionHeader.encode(info)).toString()).toBe('v1.1.9|abc123|2024-08-01 12:00:00|linux|amd64');
    expect(hexOf(versionHeader, info)).toBe(goReference.hex['raw.version']);
    expect(versionHeader.decode(fromHex(goReference.hex['raw.version']!))).toEqual(info);
  });

  it('needs exactly five fields, so a field may not contain |', () => {
    expectProtocolError(() => versionHeader.decode(Buffer.from('v1|a|b|c')), 'invalid-version');
    expectProtocolError(() => versionHeader.decode(Buffer.from('v1|a|b|c|d|e')), 'invalid-version');
    expectProtocolError(() => versionHeader.decode(Uint8Array.of(0xff)), 'invalid-version');
    expectProtocolError(() => versionHeader.encode({ ...info, buildDate: 'a|b' }), 'invalid-message');
    expect(versionHeader.decode(Buffer.from('||||'))).toEqual({
      version: '',
      revision: '',
      buildDate: '',
      os: '',
      arch: '',
    });
  });
});

describe('message header accessors', () => {
  it('get, set and require typed headers', () => {
    const msg = createMessage(1);
    setHeader(msg, ChannelHeader.Heartbeat, uint64Header, 5n);
    expect(getHeader(msg, ChannelHeader.Heartbeat, uint64Header)).toBe(5n);
    expect(getHeader(msg.headers, ChannelHeader.HeartbeatResponse, uint64Header)).toBeUndefined();
    expectProtocolError(() => requireHeader(msg, ChannelHeader.HeartbeatResponse, uint64Header), 'missing-header');
  });
});

describe('hostile header values', () => {
  const codecs: [string, HeaderCodec<unknown>][] = [
    ['int32', int32Header],
    ['uint32', uint32Header],
    ['uint64', uint64Header],
    ['byte', byteHeader],
    ['bool', boolHeader],
    ['string', stringHeader],
    ['stringSlice', stringSliceHeader],
    ['stringMap', stringMapHeader],
    ['u32BytesMap', u32BytesMapHeader],
    ['capabilities', capabilitiesHeader],
    ['version', versionHeader],
  ] as [string, HeaderCodec<unknown>][];

  it.each(codecs)('%s decodes or throws ChannelProtocolError', (_name, codec) => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }),
          // a plausible count and length prefix followed by noise
          fc.tuple(fc.nat(300), fc.nat(10000), fc.uint8Array({ maxLength: 40 })).map(([n, len, rest]) => {
            const b = new Uint8Array(8 + rest.length);
            new DataView(b.buffer).setUint32(0, n, true);
            new DataView(b.buffer).setUint32(4, len, true);
            b.set(rest, 8);
            return b;
          }),
        ),
        (bytes) => {
          onlyProtocolErrors(() => codec.decode(bytes));
        },
      ),
      { numRuns: 300 },
    );
  });
});
