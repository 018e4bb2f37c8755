import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { expect } from 'vitest';
import {
  type ChannelMessage,
  ChannelProtocolError,
  type FieldShape,
  type MapKeyType,
  type MessageType,
  type ScalarType,
} from '../src/index.ts';

interface GoReference {
  hex: Record<string, string>;
  facts: Record<string, string>;
}

/** Bytes and behaviours recorded from the Go reference (see the fixture's `source`). */
export const goReference: GoReference = JSON.parse(
  readFileSync(join(import.meta.dirname, 'fixtures', 'go-reference.json'), 'utf8'),
) as GoReference;

export function golden(name: string): Uint8Array {
  const h = goReference.hex[name];
  if (h === undefined) throw new Error(`no golden ${name}`);
  return fromHex(h);
}

export function fromHex(h: string): Uint8Array {
  const clean = h.replace(/[\s_]/g, '');
  return Uint8Array.from(Buffer.from(clean, 'hex'));
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Runs `fn`; passes when it returns or throws a ChannelProtocolError, fails on any other exception. */
export function onlyProtocolErrors<T>(fn: () => T): T | ChannelProtocolError {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ChannelProtocolError) return err;
    throw new Error(`unexpected ${String(err)}`, { cause: err });
  }
}

export function expectProtocolError(fn: () => unknown, code: ChannelProtocolError['code']): ChannelProtocolError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ChannelProtocolError);
  expect((caught as ChannelProtocolError).code).toBe(code);
  return caught as ChannelProtocolError;
}

const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 6 }));
const bytes = fc.uint8Array({ maxLength: 12 });
const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
const uint32 = fc.integer({ min: 0, max: 0xffffffff });

function scalar(type: ScalarType | MapKeyType): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string':
      return text;
    case 'bytes':
      return bytes;
    case 'bool':
      return fc.boolean();
    case 'int32':
    case 'sint32':
    case 'sfixed32':
    case 'enum':
      return int32;
    case 'uint32':
    case 'fixed32':
      return uint32;
    case 'int64':
    case 'sint64':
    case 'sfixed64':
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    case 'uint64':
    case 'fixed64':
      return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    case 'double':
      return fc.double({ noNaN: true });
    case 'float':
      return fc.float({ noNaN: true });
  }
}

function mapOf(key: fc.Arbitrary<unknown>, value: fc.Arbitrary<unknown>): fc.Arbitrary<Map<unknown, unknown>> {
  return fc.array(fc.tuple(key, value), { maxLength: 4 }).map((entries) => new Map(entries));
}

function shapeArbitrary(shape: FieldShape, depth: number): fc.Arbitrary<unknown> {
  switch (shape.kind) {
    case 'scalar':
      return scalar(shape.type);
    case 'repeated':
      return fc.array(scalar(shape.type), { maxLength: 4 });
    case 'message':
      return fc.option(messageArbitrary(shape.type, depth + 1), { nil: undefined });
    case 'repeatedMessage':
      return fc.array(messageArbitrary(shape.type, depth + 1), { maxLength: 3 });
    case 'map':
      return mapOf(scalar(shape.key), scalar(shape.value));
    case 'messageMap':
      return mapOf(scalar(shape.key), messageArbitrary(shape.value, depth + 1));
  }
}

/** Any value of a message type, derived from its field table. */
export function messageArbitrary<T>(type: MessageType<T>, depth = 0): fc.Arbitrary<T> {
  const record: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of type.fields) record[f.name] = shapeArbitrary(f.shape, depth);
  return fc.record(record).map((r) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r)) if (v !== undefined) out[k] = v;
    return out as T;
  });
}

/** Any channel message the encoder accepts. */
export const channelMessageArbitrary: fc.Arbitrary<ChannelMessage> = fc
  .record({
    contentType: int32,
    sequence: int32,
    replyFor: fc.option(int32, { nil: undefined }),
    headers: fc
      .uniqueArray(fc.tuple(fc.oneof(int32, fc.integer({ min: 0, max: 2000 })), fc.uint8Array({ maxLength: 40 })), {
        maxLength: 6,
        selector: ([k]) => k,
      })
      .map((entries) => new Map(entries.filter(([k]) => k !== 1))),
    body: fc.uint8Array({ maxLength: 300 }),
  })
  .map(({ replyFor, ...rest }) => (replyFor === undefined ? rest : { ...rest, replyFor }));

/** Cuts `bytes` at the given sorted offsets. */
export function chunk(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => Math.min(c, bytes.length)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(bytes.subarray(prev, p));
    prev = p;
  }
  out.push(bytes.subarray(prev));
  return out;
}
