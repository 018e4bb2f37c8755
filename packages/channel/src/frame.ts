/**
 * Channel v2 framing (openziti/channel v2.0.143 `message.go`): a 20-byte message section (magic 03 06 09 0c, then
 * content type, sequence, headers length and body length as little-endian int32), the headers as repeated
 * (int32 key, int32 length, bytes), then the body.
 */
import { EMPTY_BYTES, isInt32, readInt32LE, readUint32LE, writeUint32LE } from './bytes.ts';
import { ChannelProtocolError } from './errors.ts';

/** One channel message. `headers` keeps wire order; `replyFor` mirrors header 1 (`ReplyForHeader`). */
export interface ChannelMessage {
  contentType: number;
  sequence: number;
  /** The sequence this message answers. The reference treats −1 as "not a reply" (message.go IsReply). */
  replyFor?: number;
  headers: Map<number, Uint8Array>;
  body: Uint8Array;
}

// channel message.go: magicV2, magicUnknownVersion, dataSectionV2
export const FRAME_MAGIC_V2: Uint8Array = Uint8Array.of(0x03, 0x06, 0x09, 0x0c);
export const FRAME_MAGIC_UNKNOWN_VERSION: Uint8Array = Uint8Array.of(0x03, 0x06, 0x09, 0x0a);
export const FRAME_HEADER_LENGTH = 20;

// channel channel.go: HelloSequence; a new message's sequence before the channel numbers it (message.go NewMessage).
export const HELLO_SEQUENCE = -1;

// channel message.go ReadV2 puts no bound on either length (both are read as uint32 and allocated at once); only the
// first message of a connection, the hello, is bounded (readHelloV2: 4192 bytes each). These defaults are ours.
export const HELLO_MAX_SECTION_BYTES = 4192;
export const DEFAULT_MAX_HEADERS_BYTES = 64 * 1024;
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

// channel message.go ReplyTo: headers 128..255 of a request are copied into its reply.
export const REFLECTED_HEADER_MIN = 128;
export const REFLECTED_HEADER_MAX = 255;

const REPLY_FOR_HEADER = 1;
const INITIAL_DATA_CAPACITY = 64 * 1024;
const MAX_SECTION_BYTES = 0x7fffffff;

export interface FrameLimits {
  maxHeadersBytes: number;
  maxBodyBytes: number;
}

/** The limits the reference's listener applies to the hello (channel message.go readHelloV2). */
export const HELLO_FRAME_LIMITS: FrameLimits = {
  maxHeadersBytes: HELLO_MAX_SECTION_BYTES,
  maxBodyBytes: HELLO_MAX_SECTION_BYTES,
};

export interface FrameDecoderOptions {
  maxHeadersBytes?: number;
  maxBodyBytes?: number;
  /** Tighter limits for the first frame only: pass `HELLO_FRAME_LIMITS` on an accepted connection. */
  firstFrameLimits?: FrameLimits;
  /**
   * The reference keeps the last value of a repeated header key (message.go unmarshalHeaders stores into a map);
   * its own encoder cannot repeat a key, so by default a repeat is treated as hostile.
   */
  duplicateHeaders?: 'reject' | 'last-wins';
}

export interface CreateMessageOptions {
  sequence?: number;
  replyFor?: number;
  headers?: Iterable<readonly [number, Uint8Array]>;
}

export function createMessage(
  contentType: number,
  body: Uint8Array = EMPTY_BYTES,
  options: CreateMessageOptions = {},
): ChannelMessage {
  const msg: ChannelMessage = {
    contentType,
    sequence: options.sequence ?? HELLO_SEQUENCE,
    headers: new Map(options.headers ?? []),
    body,
  };
  if (options.replyFor !== undefined) msg.replyFor = options.replyFor;
  return msg;
}

export function isReflectedHeader(key: number): boolean {
  return key >= REFLECTED_HEADER_MIN && key <= REFLECTED_HEADER_MAX;
}

/** Makes `reply` answer `request` (channel message.go ReplyTo): sets replyFor and copies the reflected headers. */
export function replyTo(reply: ChannelMessage, request: ChannelMessage): ChannelMessage {
  reply.replyFor = request.sequence;
  for (const [key, value] of request.headers) {
    if (isReflectedHeader(key)) reply.headers.set(key, value);
  }
  return reply;
}

function encodeInt32LE(value: number): Uint8Array {
  const out = new Uint8Array(4);
  writeUint32LE(out, 0, value >>> 0);
  return out;
}

function requireInt32(value: number, what: string): void {
  if (!isInt32(value)) throw new ChannelProtocolError('invalid-message', `${what} must be an int32, got ${value}`);
}

/**
 * Encodes one frame. Headers go out in map order; `replyFor`, when set, replaces header 1 in place or comes first
 * (channel message.go marshalWithVersion writes it into the headers as a uint32).
 */
export function encodeMessage(msg: ChannelMessage): Uint8Array {
  requireInt32(msg.contentType, 'contentType');
  requireInt32(msg.sequence, 'sequence');
  const entries: [number, Uint8Array][] = [];
  let replyForBytes: Uint8Array | undefined;
  if (msg.replyFor !== undefined) {
    requireInt32(msg.replyFor, 'replyFor');
    replyForBytes = encodeInt32LE(msg.replyFor);
    if (!msg.headers.has(REPLY_FOR_HEADER)) entries.push([REPLY_FOR_HEADER, replyForBytes]);
  }
  for (const [key, value] of msg.headers) {
    requireInt32(key, 'header key');
    if (!(value instanceof Uint8Array)) throw new ChannelProtocolError('invalid-message', `header ${key} is not bytes`);
    entries.push([key, key === REPLY_FOR_HEADER && replyForBytes ? replyForBytes : value]);
  }
  let headersLength = 0;
  for (const [, value] of entries) headersLength += 8 + value.length;
  if (headersLength > MAX_SECTION_BYTES || msg.body.length > MAX_SECTION_BYTES) {
    throw new ChannelProtocolError('invalid-message', 'headers or body longer than an int32 length');
  }
  const out = new Uint8Array(FRAME_HEADER_LENGTH + headersLength + msg.body.length);
  out.set(FRAME_MAGIC_V2, 0);
  writeUint32LE(out, 4, msg.contentType >>> 0);
  writeUint32LE(out, 8, msg.sequence >>> 0);
  writeUint32LE(out, 12, headersLength);
  writeUint32LE(out, 16, msg.body.length);
  let offset = FRAME_HEADER_LENGTH;
  for (const [key, value] of entries) {
    writeUint32LE(out, offset, key >>> 0);
    writeUint32LE(out, offset + 4, value.length);
    out.set(value, offset + 8);
    offset += 8 + value.length;
  }
  out.set(msg.body, offset);
  return out;
}

/**
 * The reply a channel v2 listener writes when the first bytes are not a v2 frame (channel message.go
 * WriteUnknownVersionResponse): the unknown-version magic, a count, then the supported versions, all uint32 LE.
 */
export function encodeUnknownVersionResponse(versions: readonly number[] = [1, 2]): Uint8Array {
  const out = new Uint8Array(8 + 4 * versions.length);
  out.set(FRAME_MAGIC_UNKNOWN_VERSION, 0);
  writeUint32LE(out, 4, versions.length);
  versions.forEach((v, i) => writeUint32LE(out, 8 + 4 * i, v));
  return out;
}

function parseHeaders(section: Uint8Array, duplicates: 'reject' | 'last-wins'): Map<number, Uint8Array> {
  // channel message.go unmarshalHeaders: 8 bytes of key and length per entry, the length must fit what is left.
  const headers = new Map<number, Uint8Array>();
  let i = 0;
  while (i < section.length) {
    if (i + 8 > section.length) throw new ChannelProtocolError('truncated-header', `short header meta-data at ${i}`);
    const key = readInt32LE(section, i);
    const length = readUint32LE(section, i + 4);
    if (length > section.length - i - 8) throw new ChannelProtocolError('truncated-header', `short header ${key} data`);
    if (duplicates === 'reject' && headers.has(key)) {
      throw new ChannelProtocolError('duplicate-header', `header ${key} repeated`);
    }
    headers.set(key, section.subarray(i + 8, i + 8 + length));
    i += 8 + length;
  }
  return headers;
}

function buildMessage(
  messageSection: Uint8Array,
  data: Uint8Array,
  headersLength: number,
  duplicates: 'reject' | 'last-wins',
): ChannelMessage {
  const headers = parseHeaders(data.subarray(0, headersLength), duplicates);
  const msg: ChannelMessage = {
    contentType: readInt32LE(messageSection, 4),
    sequence: readInt32LE(messageSection, 8),
    headers,
    body: data.subarray(headersLength),
  };
  const replyFor = headers.get(REPLY_FOR_HEADER);
  if (replyFor !== undefined) {
    // message.go cacheReplyFor only logs a replyFor that is not 4 bytes and then dereferences a nil pointer.
    if (replyFor.length !== 4) throw new ChannelProtocolError('invalid-reply-for', `length ${replyFor.length}`);
    msg.replyFor = readInt32LE(replyFor, 0);
  }
  return msg;
}

/**
 * Incremental frame decoder: push socket chunks, get complete messages. It holds at most the 20-byte message section
 * of the frame in progress plus that frame's declared data, which the limits bound before anything is kept. The data
 * buffer grows as bytes arrive (doubling from 64 KiB up to the declared length), so a peer that declares 16 MiB and
 * sends 20 bytes costs 64 KiB, not 16 MiB. After an error the decoder stays failed: every later call throws the same
 * error (the stream has lost its framing).
 */
export class FrameDecoder {
  private readonly limits: FrameLimits;
  private readonly firstLimits: FrameLimits | undefined;
  private readonly duplicates: 'reject' | 'last-wins';
  private readonly section = new Uint8Array(FRAME_HEADER_LENGTH);
  private sectionFill = 0;
  /** Declared headers + body length of the frame in progress; undefined while its section is still coming. */
  private dataLength: number | undefined;
  /** Received data of the frame in progress; grows by doubling up to dataLength. */
  private data: Uint8Array = EMPTY_BYTES;
  private dataFill = 0;
  private headersLength = 0;
  private frames = 0;
  private failure: ChannelProtocolError | undefined;

  constructor(options: FrameDecoderOptions = {}) {
    this.limits = {
      maxHeadersBytes: checkLimit(options.maxHeadersBytes ?? DEFAULT_MAX_HEADERS_BYTES, 'maxHeadersBytes'),
      maxBodyBytes: checkLimit(options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, 'maxBodyBytes'),
    };
    if (options.firstFrameLimits) {
      this.firstLimits = {
        maxHeadersBytes: checkLimit(options.firstFrameLimits.maxHeadersBytes, 'firstFrameLimits.maxHeadersBytes'),
        maxBodyBytes: checkLimit(options.firstFrameLimits.maxBodyBytes, 'firstFrameLimits.maxBodyBytes'),
      };
    }
    this.duplicates = options.duplicateHeaders ?? 'reject';
  }

  /** Bytes held for the frame in progress. */
  get bufferedBytes(): number {
    return this.sectionFill + this.dataFill;
  }

  /** The most this decoder will hold for the frame in progress: its section plus its declared data. */
  get reservedBytes(): number {
    return FRAME_HEADER_LENGTH + (this.dataLength ?? 0);
  }

  get framesDecoded(): number {
    return this.frames;
  }

  get failed(): ChannelProtocolError | undefined {
    return this.failure;
  }

  push(chunk: Uint8Array): ChannelMessage[] {
    if (this.failure) throw this.failure;
    try {
      return this.consume(chunk);
    } catch (err) {
      this.failure =
        err instanceof ChannelProtocolError ? err : new ChannelProtocolError('invalid-length', String(err));
      throw this.failure;
    }
  }

  /** Call at end of stream: throws if a frame was cut off. */
  finish(): void {
    if (this.failure) throw this.failure;
    if (this.sectionFill > 0 || this.dataLength !== undefined) {
      this.failure = new ChannelProtocolError('truncated-frame', `${this.bufferedBytes} bytes of an unfinished frame`);
      throw this.failure;
    }
  }

  private consume(chunk: Uint8Array): ChannelMessage[] {
    const out: ChannelMessage[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      if (this.dataLength === undefined) {
        const take = Math.min(FRAME_HEADER_LENGTH - this.sectionFill, chunk.length - pos);
        const before = this.sectionFill;
        this.section.set(chunk.subarray(pos, pos + take), this.sectionFill);
        this.sectionFill += take;
        pos += take;
        if (before < 4) this.checkMagic();
        if (this.sectionFill < FRAME_HEADER_LENGTH) break;
        this.startData();
      }
      // A frame with no data completes as soon as its section is in (take is 0 then).
      const dataLength = this.dataLength!;
      const take = Math.min(dataLength - this.dataFill, chunk.length - pos);
      if (take > 0) {
        // Copied: messages must not alias the caller's buffers (Node pools small socket reads in one slab).
        this.ensureCapacity(this.dataFill + take, dataLength);
        this.data.set(chunk.subarray(pos, pos + take), this.dataFill);
        this.dataFill += take;
        pos += take;
      }
      if (this.dataFill === dataLength) out.push(this.completeFrame());
    }
    return out;
  }

  private checkMagic(): void {
    const n = Math.min(this.sectionFill, 4);
    for (let i = 0; i < n; i++) {
      if (this.section[i] === FRAME_MAGIC_V2[i]) continue;
      if (i === 3 && this.section[i] === FRAME_MAGIC_UNKNOWN_VERSION[3]) {
        throw new ChannelProtocolError('unknown-version', 'peer answered with the unknown-version magic');
      }
      throw new ChannelProtocolError('bad-magic', 'not a channel v2 frame');
    }
  }

  private startData(): void {
    const headersLength = readUint32LE(this.section, 12);
    const bodyLength = readUint32LE(this.section, 16);
    if (headersLength > MAX_SECTION_BYTES || bodyLength > MAX_SECTION_BYTES) {
      throw new ChannelProtocolError(
        'invalid-length',
        `negative length (headers ${headersLength}, body ${bodyLength})`,
      );
    }
    const limits = this.frames === 0 && this.firstLimits ? this.firstLimits : this.limits;
    if (headersLength > limits.maxHeadersBytes) {
      throw new ChannelProtocolError('headers-too-large', `${headersLength} > ${limits.maxHeadersBytes}`);
    }
    if (bodyLength > limits.maxBodyBytes) {
      throw new ChannelProtocolError('body-too-large', `${bodyLength} > ${limits.maxBodyBytes}`);
    }
    this.headersLength = headersLength;
    this.dataLength = headersLength + bodyLength;
    this.data = EMPTY_BYTES;
    this.dataFill = 0;
  }

  private ensureCapacity(needed: number, dataLength: number): void {
    if (needed <= this.data.length) return;
    let size = Math.max(this.data.length * 2, INITIAL_DATA_CAPACITY);
    while (size < needed) size *= 2;
    const next = new Uint8Array(Math.min(size, dataLength));
    next.set(this.data.subarray(0, this.dataFill));
    this.data = next;
  }

  private completeFrame(): ChannelMessage {
    const data = this.data.length === this.dataFill ? this.data : this.data.slice(0, this.dataFill);
    const msg = buildMessage(this.section, data, this.headersLength, this.duplicates);
    this.sectionFill = 0;
    this.dataLength = undefined;
    this.data = EMPTY_BYTES;
    this.dataFill = 0;
    this.frames++;
    return msg;
  }
}

function checkLimit(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 0 || value > MAX_SECTION_BYTES) {
    throw new ChannelProtocolError('invalid-message', `${what} must be an integer in 0..2^31-1`);
  }
  return value;
}

/** Decodes a buffer that holds whole frames only (a fixture, a captured stream). */
export function decodeFrames(bytes: Uint8Array, options?: FrameDecoderOptions): ChannelMessage[] {
  const decoder = new FrameDecoder(options);
  const messages = decoder.push(bytes);
  decoder.finish();
  return messages;
}

/** Decodes exactly one frame. */
export function decodeMessage(bytes: Uint8Array, options?: FrameDecoderOptions): ChannelMessage {
  const messages = decodeFrames(bytes, options);
  if (messages.length !== 1) {
    throw new ChannelProtocolError('invalid-length', `expected one frame, found ${messages.length}`);
  }
  return messages[0]!;
}
