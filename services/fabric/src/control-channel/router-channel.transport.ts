import type { Duplex } from 'node:stream';
import {
  ChannelContentType,
  ChannelHeader,
  type ChannelMessage,
  FrameDecoder,
  HELLO_FRAME_LIMITS,
  HELLO_SEQUENCE,
  createHeartbeat,
  createMessage,
  createPingReply,
  encodeMessage,
  getHeartbeat,
  isChannelProtocolError,
  replyTo,
  setHeartbeat,
  setHeartbeatResponse,
} from '@ziti/channel';
import type { Logger } from '@ziti/platform';

/** What one control channel may cost before it is closed (the reasons are logged once). */
export interface ChannelLimits {
  /** Largest headers section and body of a message after the hello (the hello: 4192 bytes each). */
  maxHeadersBytes: number;
  maxBodyBytes: number;
  /** No hello this long after the TLS handshake: closed. */
  helloTimeoutMs: number;
  /** Nothing at all from the peer this long (routers heartbeat every 10 s): closed. */
  idleTimeoutMs: number;
  /** Our own heartbeats, as the reference's channel sends them. */
  heartbeatIntervalMs: number;
  /** Bytes queued to the peer beyond which it is too slow to keep up: closed. */
  maxWriteBufferBytes: number;
  /** Messages per second from the peer (a token bucket of `burst`): beyond, closed. */
  messagesPerSecond: number;
  burst: number;
  /** Requests of the peer being handled at once: beyond, closed. */
  maxInFlight: number;
}

export const defaultChannelLimits: ChannelLimits = {
  maxHeadersBytes: 64 * 1024,
  maxBodyBytes: 4 * 1024 * 1024,
  helloTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  heartbeatIntervalMs: 10_000,
  maxWriteBufferBytes: 16 * 1024 * 1024,
  messagesPerSecond: 5_000,
  burst: 20_000,
  maxInFlight: 2_000,
};

export interface ChannelEvents {
  /** The first message: the peer's hello (anything else closes the channel). */
  hello(msg: ChannelMessage): void;
  /** A message that answers nothing waiting and is not the channel's own (ping, heartbeat, latency). */
  message(msg: ChannelMessage): Promise<void> | void;
  closed(reason: string): void;
}

interface Waiting {
  resolve(msg: ChannelMessage): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class ChannelClosedError extends Error {
  constructor(reason: string) {
    super(`the control channel closed: ${reason}`);
    this.name = 'ChannelClosedError';
  }
}

export class ChannelTimeoutError extends Error {
  constructor(what: string) {
    super(`timeout waiting for ${what}`);
    this.name = 'ChannelTimeoutError';
  }
}

/**
 * One control channel (openziti/channel v2): framing over the TLS stream, request/reply by
 * sequence, the channel's own messages (ping, heartbeats, latency probes), and every limit a
 * hostile or broken peer could push against: a bounded hello, bounded messages, a rate, a bound on
 * requests in flight and on bytes queued, silence. Any breach closes the channel with one logged
 * reason; nothing a peer sends can throw out of here.
 */
export class RouterChannel {
  private readonly decoder: FrameDecoder;
  private readonly waiting = new Map<number, Waiting>();
  private nextSequence = 1;
  /** Whether the hello arrived (and is being admitted): nothing else may come before it is answered. */
  private helloReceived = false;
  private state: 'hello' | 'open' | 'closed' = 'hello';
  private closeReason = '';
  private tokens: number;
  private lastRefill = Date.now();
  private inFlight = 0;
  private helloTimer?: NodeJS.Timeout;
  private idleTimer?: NodeJS.Timeout;
  private heartbeatTimer?: NodeJS.Timeout;
  /** The peer's last heartbeat, echoed on our next message. */
  private heartbeatToEcho?: bigint;
  private readonly drainWaiters: (() => void)[] = [];
  /** The last write found the socket's buffer full: 'drain' will follow. */
  private backedUp = false;

  constructor(
    private readonly socket: Duplex,
    private readonly limits: ChannelLimits,
    private readonly events: ChannelEvents,
    private readonly logger: Logger,
  ) {
    this.decoder = new FrameDecoder({
      maxHeadersBytes: limits.maxHeadersBytes,
      maxBodyBytes: limits.maxBodyBytes,
      firstFrameLimits: HELLO_FRAME_LIMITS,
    });
    this.tokens = limits.burst;
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('end', () => this.close('the peer closed the connection'));
    socket.on('close', () => this.close('the connection closed'));
    socket.on('error', (err: Error) => this.close(`connection error: ${err.message}`));
    socket.on('drain', () => {
      this.backedUp = false;
      for (const w of this.drainWaiters.splice(0)) w();
    });
    this.helloTimer = setTimeout(() => this.close('no hello in time'), limits.helloTimeoutMs);
    this.armIdle();
  }

  get closed(): boolean {
    return this.state === 'closed';
  }

  get reason(): string {
    return this.closeReason;
  }

  /** After the hello was answered: our heartbeats start. */
  open(): void {
    if (this.state !== 'hello') return;
    this.state = 'open';
    this.heartbeatTimer = setInterval(() => this.heartbeat(), this.limits.heartbeatIntervalMs);
    this.heartbeatTimer.unref();
  }

  /** The next sequence: an int32 that wraps, never −1 (the hello's). */
  private allocate(): number {
    let sequence = this.nextSequence | 0;
    if (sequence === HELLO_SEQUENCE) sequence = 0;
    this.nextSequence = (sequence + 1) | 0;
    return sequence;
  }

  /** Sends a message with the next sequence (a hello answer keeps its −1). False when the channel is closed. */
  send(msg: ChannelMessage, sequence?: number): boolean {
    if (this.state === 'closed') return false;
    const helloAnswer =
      msg.sequence === HELLO_SEQUENCE && msg.contentType === ChannelContentType.Result && msg.replyFor === -1;
    if (!helloAnswer) msg.sequence = sequence ?? this.allocate();
    if (this.heartbeatToEcho !== undefined) {
      setHeartbeatResponse(msg, this.heartbeatToEcho);
      this.heartbeatToEcho = undefined;
    }
    let bytes: Uint8Array;
    try {
      bytes = encodeMessage(msg);
    } catch (err) {
      this.logger.error({ err, contentType: msg.contentType }, 'a control-channel message could not be encoded');
      return false;
    }
    this.backedUp = !this.socket.write(bytes);
    if (this.writableLength() > this.limits.maxWriteBufferBytes) {
      this.close(`the peer does not take its messages (${this.writableLength()} bytes queued)`);
      return false;
    }
    return true;
  }

  /** Sends, then waits until the socket took what is queued (for long sequences such as a full sync). */
  async sendAndDrain(msg: ChannelMessage): Promise<void> {
    if (!this.send(msg)) throw new ChannelClosedError(this.closeReason);
    // Only a write the socket refused (its buffer is past the high-water mark) is followed by 'drain'.
    if (!this.backedUp) return;
    await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
    if (this.closed) throw new ChannelClosedError(this.closeReason);
  }

  /** Sends and waits for the message that replies to it. */
  request(msg: ChannelMessage, timeoutMs: number, what: string): Promise<ChannelMessage> {
    if (this.state === 'closed') return Promise.reject(new ChannelClosedError(this.closeReason));
    return new Promise((resolve, reject) => {
      const sequence = this.allocate();
      const timer = setTimeout(() => {
        this.waiting.delete(sequence);
        reject(new ChannelTimeoutError(what));
      }, timeoutMs);
      timer.unref();
      this.waiting.set(sequence, { resolve, reject, timer });
      if (!this.send(msg, sequence)) {
        clearTimeout(timer);
        this.waiting.delete(sequence);
        reject(new ChannelClosedError(this.closeReason));
      }
    });
  }

  /** Closes the channel (once): pending requests fail, the peer's connection ends, `closed` is told. */
  close(reason: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closeReason = reason;
    clearTimeout(this.helloTimer);
    clearTimeout(this.idleTimer);
    clearInterval(this.heartbeatTimer);
    for (const [, w] of this.waiting) {
      clearTimeout(w.timer);
      w.reject(new ChannelClosedError(reason));
    }
    this.waiting.clear();
    for (const w of this.drainWaiters.splice(0)) w();
    this.socket.destroy();
    this.events.closed(reason);
  }

  private writableLength(): number {
    return (this.socket as Duplex & { writableLength: number }).writableLength ?? 0;
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    if (this.state === 'closed') return;
    this.idleTimer = setTimeout(
      () => this.close(`nothing from the peer for ${this.limits.idleTimeoutMs} ms`),
      this.limits.idleTimeoutMs,
    );
    this.idleTimer.unref();
  }

  private heartbeat(): void {
    const msg = createHeartbeat();
    setHeartbeat(msg, BigInt(Date.now()) * 1_000_000n);
    this.send(msg);
  }

  private received(chunk: Buffer): void {
    if (this.state === 'closed') return;
    this.armIdle();
    let messages: ChannelMessage[];
    try {
      messages = this.decoder.push(chunk);
    } catch (err) {
      this.close(isChannelProtocolError(err) ? `bad frame: ${err.message}` : 'bad frame');
      return;
    }
    for (const msg of messages) {
      if (this.closed) return;
      if (!this.admitRate()) {
        this.close(`the peer sends more than ${this.limits.messagesPerSecond} messages a second`);
        return;
      }
      try {
        this.dispatch(msg);
      } catch (err) {
        this.close(
          isChannelProtocolError(err) ? `malformed message: ${err.message}` : 'a message could not be handled',
        );
        return;
      }
    }
  }

  private admitRate(): boolean {
    const now = Date.now();
    this.tokens = Math.min(
      this.limits.burst,
      this.tokens + ((now - this.lastRefill) / 1000) * this.limits.messagesPerSecond,
    );
    this.lastRefill = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private dispatch(msg: ChannelMessage): void {
    if (this.state === 'hello') {
      if (this.helloReceived) {
        // The router waits for the hello's answer before it sends anything else.
        this.close(`a message of type ${msg.contentType} before the hello was answered`);
        return;
      }
      clearTimeout(this.helloTimer);
      if (msg.contentType !== ChannelContentType.Hello) {
        this.close(`the first message is of type ${msg.contentType}, not a hello`);
        return;
      }
      this.helloReceived = true;
      this.events.hello(msg);
      return;
    }
    // A heartbeat header of the wrong size (the reference reads it as 0) is not echoed.
    const beat = msg.headers.get(ChannelHeader.Heartbeat)?.length === 8 ? getHeartbeat(msg) : undefined;
    if (beat !== undefined) this.heartbeatToEcho = beat;
    if (msg.replyFor !== undefined && msg.replyFor !== HELLO_SEQUENCE) {
      const waiting = this.waiting.get(msg.replyFor);
      if (waiting) {
        this.waiting.delete(msg.replyFor);
        clearTimeout(waiting.timer);
        waiting.resolve(msg);
        return;
      }
    }
    switch (msg.contentType) {
      case ChannelContentType.Hello:
        this.close('a second hello');
        return;
      case ChannelContentType.Ping:
        this.send(createPingReply(msg));
        return;
      case ChannelContentType.Heartbeat:
        // Echo at once: the router marks a controller that does not as unresponsive.
        if (this.heartbeatToEcho !== undefined) this.send(createHeartbeat());
        return;
      case ChannelContentType.Latency:
        this.send(replyTo(createMessage(ChannelContentType.LatencyResponse), msg));
        return;
      case ChannelContentType.LatencyResponse:
      case ChannelContentType.Result:
        return;
    }
    if (this.inFlight >= this.limits.maxInFlight) {
      this.close(`more than ${this.limits.maxInFlight} requests of the peer in flight`);
      return;
    }
    this.inFlight++;
    void Promise.resolve()
      .then(() => this.events.message(msg))
      .catch((err: unknown) => {
        if (isChannelProtocolError(err)) this.close(`malformed message of type ${msg.contentType}: ${err.message}`);
        else this.logger.error({ err, contentType: msg.contentType }, 'a control-channel message failed');
      })
      .finally(() => {
        this.inFlight--;
      });
  }
}
