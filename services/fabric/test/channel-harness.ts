import { once } from 'node:events';
import { type AddressInfo, type Server, type Socket, connect, createServer } from 'node:net';
import { Writable } from 'node:stream';
import {
  type ChannelMessage,
  FRAME_HEADER_LENGTH,
  FRAME_MAGIC_V2,
  FrameDecoder,
  createRouterHello,
  encodeMessage,
} from '@ziti/channel';
import { type Logger, createLogger } from '@ziti/platform';
import {
  type ChannelEvents,
  type ChannelLimits,
  RouterChannel,
  defaultChannelLimits,
} from '../src/control-channel/router-channel.transport.ts';

/**
 * A `RouterChannel` on the accepting end of a real loopback TCP connection, and the peer (a
 * stand-in router, or a hostile one) on the other: the peer writes bytes or frames, reads and
 * decodes what the channel sends, and every event of the channel is recorded.
 */
export interface ChannelPair {
  channel: RouterChannel;
  /** The peer's socket (the "router"). */
  peer: Socket;
  /** The channel's socket (the controller's end). */
  socket: Socket;
  hellos: ChannelMessage[];
  messages: ChannelMessage[];
  /** Every `closed(reason)` the channel reported, in order (exactly one is expected, ever). */
  closes: string[];
  /** What the peer received from the channel, decoded. */
  received: ChannelMessage[];
  /** Log lines written by the channel's logger. */
  logs: LogLine[];
  /** What the peer could not decode of what the channel sent (expected to stay empty). */
  peerErrors: unknown[];
  /** Resolves with the first close reason. */
  closed: Promise<string>;
  /** Resolves when the peer's socket is closed (the channel ended the connection, or the test did). */
  peerClosed: Promise<void>;
  /** Bytes the channel's socket has received so far. */
  bytesIn(): number;
  /** Writes raw bytes as the peer. */
  write(bytes: Uint8Array): void;
  /** Encodes and writes a message as the peer. */
  send(msg: ChannelMessage): void;
  /** Waits for a message the peer receives that matches (one received earlier counts). */
  next(match: (msg: ChannelMessage) => boolean, timeoutMs?: number): Promise<ChannelMessage>;
  /** Writes, then waits until the channel's socket has read every byte written so far. */
  deliver(bytes: Uint8Array): Promise<void>;
  dispose(): Promise<void>;
}

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface PairOptions {
  limits?: Partial<ChannelLimits>;
  /** Replaces the recorder's reaction to a hello (it is recorded either way). */
  onHello?: (msg: ChannelMessage, channel: RouterChannel) => void;
  /** What `message` does (recorded either way); by default it resolves at once. */
  onMessage?: (msg: ChannelMessage, channel: RouterChannel) => Promise<void> | void;
}

/** Limits small enough for tests; timers long enough not to fire unless a test wants them to. */
export const testLimits: ChannelLimits = {
  ...defaultChannelLimits,
  maxHeadersBytes: 1024,
  maxBodyBytes: 64 * 1024,
  helloTimeoutMs: 5_000,
  idleTimeoutMs: 10_000,
  heartbeatIntervalMs: 60_000,
  maxWriteBufferBytes: 16 * 1024 * 1024,
  messagesPerSecond: 100_000,
  burst: 100_000,
  maxInFlight: 100,
};

export const routerVersion = {
  version: 'v1.1.9',
  revision: 'abcdef012345',
  buildDate: '2024-08-01T00:00:00Z',
  os: 'linux',
  arch: 'amd64',
};

export function routerHello(routerId = 'router-1'): ChannelMessage {
  return createRouterHello({ routerId, version: routerVersion });
}

/** A logger whose lines are kept (JSON parsed). */
export function capturingLogger(level = 'debug'): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('fabric-test', level, destination), lines };
}

/** The 20-byte message section of a frame, with whatever lengths a test wants to declare. */
export function frameSection(contentType: number, sequence: number, headersLength: number, bodyLength: number): Buffer {
  const out = Buffer.alloc(FRAME_HEADER_LENGTH);
  out.set(FRAME_MAGIC_V2, 0);
  out.writeInt32LE(contentType, 4);
  out.writeInt32LE(sequence, 8);
  out.writeUInt32LE(headersLength >>> 0, 12);
  out.writeUInt32LE(bodyLength >>> 0, 16);
  return out;
}

/** One header entry as the wire has it (int32 key, int32 length, bytes); `declared` may lie about the length. */
export function headerEntry(key: number, value: Uint8Array, declared = value.length): Buffer {
  const out = Buffer.alloc(8 + value.length);
  out.writeInt32LE(key, 0);
  out.writeUInt32LE(declared >>> 0, 4);
  out.set(value, 8);
  return out;
}

const pairs = new Set<ChannelPair>();

/** Closes every pair a test left open (call from afterEach). */
export async function disposeAllPairs(): Promise<void> {
  await Promise.all([...pairs].map((p) => p.dispose()));
}

export async function channelPair(options: PairOptions = {}): Promise<ChannelPair> {
  const limits: ChannelLimits = { ...testLimits, ...options.limits };
  const { logger, lines } = capturingLogger();
  const server: Server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const peer = connect({ port, host: '127.0.0.1', noDelay: true });
  peer.on('error', () => undefined);
  await once(peer, 'connect');
  const [socket] = await accepted;
  socket.setNoDelay(true);
  server.close();

  const hellos: ChannelMessage[] = [];
  const messages: ChannelMessage[] = [];
  const closes: string[] = [];
  const received: ChannelMessage[] = [];
  const peerErrors: unknown[] = [];
  const waiters: { match: (m: ChannelMessage) => boolean; resolve: (m: ChannelMessage) => void }[] = [];
  let resolveClosed!: (reason: string) => void;
  const closed = new Promise<string>((resolve) => (resolveClosed = resolve));

  const events: ChannelEvents = {
    hello: (msg) => {
      hellos.push(msg);
      options.onHello?.(msg, channel);
    },
    message: (msg) => {
      messages.push(msg);
      return options.onMessage?.(msg, channel);
    },
    closed: (reason) => {
      closes.push(reason);
      resolveClosed(reason);
    },
  };
  const channel: RouterChannel = new RouterChannel(socket, limits, events, logger);
  let bytesIn = 0;
  socket.on('data', (chunk: Buffer) => (bytesIn += chunk.length));
  const byteWaiters: { at: number; resolve: () => void }[] = [];
  socket.on('data', () => {
    for (const w of byteWaiters.splice(0)) {
      if (bytesIn >= w.at) w.resolve();
      else byteWaiters.push(w);
    }
  });

  const decoder = new FrameDecoder({ maxBodyBytes: 64 * 1024 * 1024 });
  peer.on('data', (chunk: Buffer) => {
    let msgs: ChannelMessage[];
    try {
      msgs = decoder.push(chunk);
    } catch (err) {
      peerErrors.push(err);
      return;
    }
    for (const m of msgs) {
      received.push(m);
      for (const w of [...waiters]) {
        if (w.match(m)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    }
  });
  const peerClosed = once(peer, 'close').then(() => undefined);
  let written = 0;

  const pair: ChannelPair = {
    channel,
    peer,
    socket,
    hellos,
    messages,
    closes,
    received,
    logs: lines,
    peerErrors,
    closed,
    peerClosed,
    bytesIn: () => bytesIn,
    write(bytes) {
      written += bytes.length;
      peer.write(bytes);
    },
    send(msg) {
      pair.write(encodeMessage(msg));
    },
    next(match, timeoutMs = 2_000) {
      const seen = received.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`the peer received no matching message in ${timeoutMs} ms`));
        }, timeoutMs);
        const waiter = {
          match,
          resolve: (m: ChannelMessage) => {
            clearTimeout(timer);
            resolve(m);
          },
        };
        waiters.push(waiter);
      });
    },
    async deliver(bytes) {
      pair.write(bytes);
      const at = written;
      if (bytesIn >= at || channel.closed) return;
      await Promise.race([new Promise<void>((resolve) => byteWaiters.push({ at, resolve })), closed, peerClosed]);
    },
    async dispose() {
      pairs.delete(pair);
      peer.destroy();
      socket.destroy();
      await peerClosed;
      if (!socket.closed) await once(socket, 'close');
    },
  };
  pairs.add(pair);
  return pair;
}

/** A pair whose peer said hello and whose channel was opened (as the listener does once it admits). */
export async function openPair(options: PairOptions = {}): Promise<ChannelPair> {
  const pair = await channelPair({
    ...options,
    onHello: (msg, channel) => {
      channel.open();
      options.onHello?.(msg, channel);
    },
  });
  await pair.deliver(encodeMessage(routerHello()));
  await until(() => pair.hellos.length === 1 || pair.channel.closed, 'the hello');
  return pair;
}

/** Polls a condition on the event loop (no fixed sleeps); rejects after `timeoutMs`. */
export async function until(check: () => boolean, what: string, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Lets pending I/O callbacks and microtasks run. */
export function settle(ms = 20): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
