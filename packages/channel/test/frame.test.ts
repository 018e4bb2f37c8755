import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ChannelMessage,
  ChannelProtocolError,
  createMessage,
  decodeFrames,
  decodeMessage,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_HEADERS_BYTES,
  encodeMessage,
  encodeUnknownVersionResponse,
  FRAME_HEADER_LENGTH,
  FrameDecoder,
  HELLO_FRAME_LIMITS,
  replyTo,
} from '../src/index.ts';
import {
  channelMessageArbitrary,
  chunk,
  expectProtocolError,
  fromHex,
  golden,
  goReference,
  onlyProtocolErrors,
  toHex,
  utf8,
} from './helpers.ts';

/** The 20-byte message section, written out by hand (channel message.go, "Channel V2 Wire Format"). */
function section(contentType: string, sequence: string, headersLength: string, bodyLength: string): string {
  return `0306090c ${contentType} ${sequence} ${headersLength} ${bodyLength}`;
}

describe('encodeMessage', () => {
  it('writes the magic, four int32 LE lengths, the headers and the body', () => {
    const msg = createMessage(1, utf8('hi'));
    expect(toHex(encodeMessage(msg))).toBe(
      toHex(fromHex(section('01000000', 'ffffffff', '00000000', '02000000') + '6869')),
    );
    expect(toHex(encodeMessage(msg))).toBe(goReference.hex['frame.ping-like']);
  });

  it('writes each header as int32 key, int32 length, bytes, and replyFor as header 1 first', () => {
    const msg = createMessage(2, utf8('ok'), {
      sequence: 9,
      replyFor: 7,
      headers: [
        [2, Uint8Array.of(1)],
        [128, Uint8Array.of(0xaa, 0xbb)],
      ],
    });
    const expected =
      section('02000000', '09000000', '1f000000', '02000000') +
      '01000000 04000000 07000000' + // replyFor = 7
      '02000000 01000000 01' + // success = true
      '80000000 02000000 aabb' + // reflected header 128
      '6f6b';
    expect(toHex(encodeMessage(msg))).toBe(toHex(fromHex(expected)));
  });

  it('replaces a header 1 in place when replyFor is set', () => {
    const msg = createMessage(2, undefined, {
      replyFor: -1,
      headers: [
        [9, Uint8Array.of()],
        [1, Uint8Array.of(0, 0, 0, 0)],
      ],
    });
    const decoded = decodeMessage(encodeMessage(msg));
    expect([...decoded.headers.keys()]).toEqual([9, 1]);
    expect(decoded.replyFor).toBe(-1);
  });

  it('refuses values the int32 fields cannot carry', () => {
    expectProtocolError(() => encodeMessage(createMessage(2 ** 31)), 'invalid-message');
    expectProtocolError(() => encodeMessage(createMessage(1, undefined, { sequence: 1.5 })), 'invalid-message');
    expectProtocolError(
      () => encodeMessage(createMessage(1, undefined, { replyFor: -(2 ** 31) - 1 })),
      'invalid-message',
    );
    const msg = createMessage(1);
    msg.headers.set(2 ** 32, Uint8Array.of());
    expectProtocolError(() => encodeMessage(msg), 'invalid-message');
  });
});

describe('decoding the reference frames', () => {
  // Go writes headers in random map order; re-encoding keeps the wire order, so the bytes must match exactly.
  const frames = Object.keys(goReference.hex).filter((k) => k.startsWith('frame.'));
  it.each(frames)('%s decodes and re-encodes byte for byte', (name) => {
    const bytes = golden(name);
    const msg = decodeMessage(bytes);
    expect(toHex(encodeMessage(msg))).toBe(toHex(bytes));
  });

  it('reads a reply with reflected headers (channel message.go ReplyTo)', () => {
    const msg = decodeMessage(golden('frame.result-reply'));
    expect(msg.contentType).toBe(2);
    expect(msg.sequence).toBe(9);
    expect(msg.replyFor).toBe(7);
    expect(msg.headers.get(128)).toEqual(Uint8Array.of(0xaa, 0xbb));
    expect(msg.headers.has(300)).toBe(false);
    expect(msg.body).toEqual(utf8('ok'));
  });

  it('reads the heartbeat header as a uint64 LE', () => {
    const msg = decodeMessage(golden('frame.heartbeat'));
    expect(msg.sequence).toBe(42);
    expect(Buffer.from(msg.headers.get(5)!).readBigUInt64LE()).toBe(1700000000123456789n);
    expect(msg.body.length).toBe(0);
  });
});

describe('replyTo', () => {
  it('sets replyFor to the request sequence and copies headers 128-255 only', () => {
    const request = createMessage(1, undefined, {
      sequence: 12,
      headers: [
        [127, Uint8Array.of(1)],
        [128, Uint8Array.of(2)],
        [255, Uint8Array.of(3)],
        [256, Uint8Array.of(4)],
      ],
    });
    const reply = replyTo(createMessage(2), request);
    expect(reply.replyFor).toBe(12);
    expect([...reply.headers.keys()]).toEqual([128, 255]);
  });
});

describe('encodeUnknownVersionResponse', () => {
  it('matches WriteUnknownVersionResponse', () => {
    expect(toHex(encodeUnknownVersionResponse())).toBe(goReference.hex['raw.unknown-version-response']);
  });
});

describe('FrameDecoder', () => {
  it('reassembles frames split at every possible point', () => {
    const a = encodeMessage(createMessage(7, utf8('first'), { sequence: 1, headers: [[5, new Uint8Array(8)]] }));
    const b = encodeMessage(createMessage(8, new Uint8Array(0), { sequence: 2 }));
    const stream = Uint8Array.from([...a, ...b]);
    for (let cut = 0; cut <= stream.length; cut++) {
      const decoder = new FrameDecoder();
      const got = [...decoder.push(stream.subarray(0, cut)), ...decoder.push(stream.subarray(cut))];
      decoder.finish();
      expect(got.map((m) => m.contentType)).toEqual([7, 8]);
    }
  });

  it('yields a frame with no headers and no body as soon as its 20 bytes are in', () => {
    const decoder = new FrameDecoder();
    const bytes = encodeMessage(createMessage(5));
    expect(decoder.push(bytes.subarray(0, 19))).toEqual([]);
    expect(decoder.push(bytes.subarray(19))).toHaveLength(1);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it('property: any messages, any chunking, come back equal', () => {
    fc.assert(
      fc.property(
        fc.array(channelMessageArbitrary, { maxLength: 5 }),
        fc.array(fc.nat({ max: 4000 }), { maxLength: 12 }),
        (messages, cuts) => {
          const stream = Uint8Array.from(messages.flatMap((m) => [...encodeMessage(m)]));
          const decoder = new FrameDecoder();
          const got: ChannelMessage[] = [];
          for (const part of chunk(stream, cuts)) {
            got.push(...decoder.push(part));
            expect(decoder.bufferedBytes).toBeLessThanOrEqual(decoder.reservedBytes);
          }
          decoder.finish();
          expect(got).toEqual(
            messages.map((m) => {
              const headers = new Map(m.headers);
              if (m.replyFor !== undefined) {
                const replyFor = new Uint8Array(4);
                new DataView(replyFor.buffer).setInt32(0, m.replyFor, true);
                const withReply = new Map<number, Uint8Array>([[1, replyFor]]);
                for (const [k, v] of headers) withReply.set(k, v);
                return { ...m, headers: withReply };
              }
              return { ...m, headers };
            }),
          );
        },
      ),
    );
  });

  it('holds only what arrived, not what a frame declares', () => {
    const decoder = new FrameDecoder();
    const head = fromHex(section('01000000', '00000000', '00000000', '00000001')); // 16 MiB body declared
    expect(decoder.push(head)).toEqual([]);
    expect(decoder.push(new Uint8Array(100))).toEqual([]);
    expect(decoder.bufferedBytes).toBe(120);
    expect(decoder.reservedBytes).toBe(20 + 16 * 1024 * 1024);
  });

  it('keeps the headers section and body as declared, copied out of the input', () => {
    const input = encodeMessage(createMessage(3, utf8('body'), { headers: [[10, utf8('v')]] }));
    const msg = decodeMessage(input);
    input.fill(0);
    expect(msg.body).toEqual(utf8('body'));
    expect(msg.headers.get(10)).toEqual(utf8('v'));
  });

  it('accepts negative header keys, as the reference does', () => {
    expect(goReference.facts['frame.negative-key']).toContain('-1:[238]');
    const msg = decodeMessage(
      fromHex(section('01000000', '00000000', '09000000', '00000000') + 'ffffffff 01000000 ee'),
    );
    expect(msg.headers.get(-1)).toEqual(Uint8Array.of(0xee));
  });

  describe('rejects', () => {
    it('a bad magic as soon as the first differing byte arrives', () => {
      const decoder = new FrameDecoder();
      expectProtocolError(() => decoder.push(Uint8Array.of(0x03, 0x07)), 'bad-magic');
      // and stays failed
      expectProtocolError(() => decoder.push(encodeMessage(createMessage(1))), 'bad-magic');
      expectProtocolError(() => decoder.finish(), 'bad-magic');
    });

    it('the unknown-version magic 03 06 09 0a', () => {
      expect(goReference.facts['frame.unknown-version-magic']).toContain('did not support');
      expectProtocolError(() => new FrameDecoder().push(encodeUnknownVersionResponse()), 'unknown-version');
    });

    it('HTTP or TLS bytes', () => {
      expectProtocolError(() => new FrameDecoder().push(utf8('GET / HTTP/1.1\r\n')), 'bad-magic');
      expectProtocolError(() => new FrameDecoder().push(Uint8Array.of(0x16, 0x03, 0x01)), 'bad-magic');
    });

    it('lengths that are negative as int32', () => {
      expectProtocolError(
        () => new FrameDecoder().push(fromHex(section('01000000', '00000000', '00000080', '00000000'))),
        'invalid-length',
      );
      expectProtocolError(
        () => new FrameDecoder().push(fromHex(section('01000000', '00000000', '00000000', 'ffffffff'))),
        'invalid-length',
      );
    });

    it('lengths over the limits before allocating anything', () => {
      const decoder = new FrameDecoder({ maxHeadersBytes: 100, maxBodyBytes: 1000 });
      expectProtocolError(
        () => decoder.push(fromHex(section('01000000', '00000000', '65000000', '00000000'))),
        'headers-too-large',
      );
      const body = new FrameDecoder({ maxHeadersBytes: 100, maxBodyBytes: 1000 });
      expectProtocolError(
        () => body.push(fromHex(section('01000000', '00000000', '00000000', 'e9030000'))),
        'body-too-large',
      );
      expect(body.reservedBytes).toBe(FRAME_HEADER_LENGTH);
      const huge = new FrameDecoder();
      expectProtocolError(
        () => huge.push(fromHex(section('01000000', '00000000', '00000000', 'ffffff7f'))),
        'body-too-large',
      );
    });

    it('a hello over 4192 bytes when the first-frame limits apply (channel message.go readHelloV2)', () => {
      const big = encodeMessage(createMessage(0, new Uint8Array(4193)));
      expectProtocolError(() => new FrameDecoder({ firstFrameLimits: HELLO_FRAME_LIMITS }).push(big), 'body-too-large');
      const ok = new FrameDecoder({ firstFrameLimits: HELLO_FRAME_LIMITS });
      expect(ok.push(encodeMessage(createMessage(0, new Uint8Array(4192))))).toHaveLength(1);
      expect(ok.push(big)).toHaveLength(1);
    });

    it('a headers section shorter than one entry, or an entry longer than the section', () => {
      expect(goReference.facts['frame.headers-5-bytes']).toContain('truncated header data');
      expectProtocolError(
        () => decodeMessage(fromHex(section('01000000', '00000000', '05000000', '00000000') + '0100000000')),
        'truncated-header',
      );
      expectProtocolError(
        () =>
          decodeMessage(fromHex(section('01000000', '00000000', '0a000000', '00000000') + '02000000 03000000 0102')),
        'truncated-header',
      );
      expectProtocolError(
        () =>
          decodeMessage(
            fromHex(section('01000000', '00000000', '0c000000', '00000000') + '02000000 00000000 0200 0000'),
          ),
        'truncated-header',
      );
    });

    it('a repeated header key, unless told to keep the last like the reference', () => {
      expect(goReference.facts['frame.duplicate-header']).toBe('ok: last value bb');
      const bytes = fromHex(
        section('01000000', '00000000', '12000000', '00000000') + '02000000 01000000 aa' + '02000000 01000000 bb',
      );
      expectProtocolError(() => decodeMessage(bytes), 'duplicate-header');
      expect(decodeMessage(bytes, { duplicateHeaders: 'last-wins' }).headers.get(2)).toEqual(Uint8Array.of(0xbb));
    });

    it('a replyFor header that is not 4 bytes (the reference dereferences nil on it)', () => {
      expect(goReference.facts['frame.reply-for-2-bytes']).toContain('nil pointer dereference');
      expect(goReference.facts['frame.reply-for-0-bytes']).toContain('nil pointer dereference');
      expectProtocolError(
        () =>
          decodeMessage(fromHex(section('01000000', '00000000', '0a000000', '00000000') + '01000000 02000000 0102')),
        'invalid-reply-for',
      );
    });

    it('a stream that ends inside a frame', () => {
      const decoder = new FrameDecoder();
      decoder.push(encodeMessage(createMessage(1, utf8('abc'))).subarray(0, 22));
      expectProtocolError(() => decoder.finish(), 'truncated-frame');
      expectProtocolError(() => decodeFrames(Uint8Array.of(3, 6, 9)), 'truncated-frame');
    });

    it('decodeMessage with more than one frame', () => {
      const one = encodeMessage(createMessage(1));
      expectProtocolError(() => decodeMessage(Uint8Array.from([...one, ...one])), 'invalid-length');
    });
  });

  describe('hostile input', () => {
    const limits = { maxHeadersBytes: 256, maxBodyBytes: 1024 };

    function feed(parts: Uint8Array[]): void {
      const decoder = new FrameDecoder(limits);
      for (const part of parts) {
        const result = onlyProtocolErrors(() => decoder.push(part));
        expect(decoder.reservedBytes).toBeLessThanOrEqual(
          FRAME_HEADER_LENGTH + limits.maxHeadersBytes + limits.maxBodyBytes,
        );
        if (result instanceof ChannelProtocolError) return;
        for (const msg of result) {
          expect(msg.body.length).toBeLessThanOrEqual(limits.maxBodyBytes);
          expect(encodeMessage(msg).length).toBeLessThanOrEqual(FRAME_HEADER_LENGTH + 256 + 1024);
        }
      }
      onlyProtocolErrors(() => decoder.finish());
    }

    it('random bytes yield messages or ChannelProtocolError, nothing else', () => {
      fc.assert(fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 8 }), feed), { numRuns: 500 });
    });

    it('random bytes after a valid magic', () => {
      fc.assert(
        fc.property(fc.uint8Array({ minLength: 16, maxLength: 400 }), fc.array(fc.nat(400)), (rest, cuts) =>
          feed(chunk(Uint8Array.from([3, 6, 9, 0x0c, ...rest]), cuts)),
        ),
        { numRuns: 500 },
      );
    });

    it('valid streams with bytes flipped or cut', () => {
      fc.assert(
        fc.property(
          fc.array(channelMessageArbitrary, { minLength: 1, maxLength: 3 }),
          fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { maxLength: 4 }),
          fc.nat(),
          (messages, flips, cut) => {
            const stream = Uint8Array.from(messages.flatMap((m) => [...encodeMessage(m)]));
            for (const [at, x] of flips) stream[at % stream.length]! ^= x;
            feed([stream.subarray(0, cut % (stream.length + 1))]);
            feed([stream]);
          },
        ),
        { numRuns: 300 },
      );
    });

    it('declared lengths near 2^31 never allocate beyond the limit', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }), (h, b) => {
          const head = new Uint8Array(20);
          head.set([3, 6, 9, 0x0c]);
          const dv = new DataView(head.buffer);
          dv.setUint32(12, h, true);
          dv.setUint32(16, b, true);
          feed([head]);
        }),
      );
    });
  });

  it('uses documented defaults', () => {
    expect(DEFAULT_MAX_HEADERS_BYTES).toBe(64 * 1024);
    expect(DEFAULT_MAX_BODY_BYTES).toBe(16 * 1024 * 1024);
  });
});
