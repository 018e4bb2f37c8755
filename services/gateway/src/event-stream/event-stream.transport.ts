// `GET /extensions/events` (management.streamEntityChangeEvents): the change feed as Server-Sent
// Events. Each subscriber follows the audit service's `auditRecord.created` events on the bus from
// its own position; what waits for its socket is bounded. A subscriber resuming with Last-Event-ID
// replays the backlog at its own pace (the follower is held back while its socket is full, so the
// rest waits in the stream); once caught up, one that cannot keep up with the live feed is told
// why and disconnected, so it never holds the gateway's memory or anybody else's events.

import { ApiError, type OperationRequest, subjects } from '@ziti/contracts';
import type { ApiSessionStore, Bus, Follower, Logger } from '@ziti/platform';
import type { Request, Response, StreamingHandler } from '../pipeline/pipeline.transport.ts';
import {
  type StreamErrorCode,
  type StreamSelection,
  changeMessage,
  changeOf,
  errorMessage,
  selects,
  sseComment,
  sseRetry,
  streamRequestOf,
} from './event-stream.domain.ts';
import { SubscriberQueue } from './subscriber-queue.domain.ts';

/** The subject of the change feed: the audit service's records, each with its entity change. */
export const changeFeedSubject = subjects.event('audit', 'auditRecord.created');

export interface EventStreamOptions {
  /** Messages that may wait for one subscriber's socket before it counts as too slow. */
  queueMessages: number;
  /** Bytes that may wait for one subscriber's socket before it counts as too slow. */
  queueBytes: number;
  /** A `: keepalive` comment after this long without a message. */
  heartbeatMs: number;
  /** The reconnection delay suggested to clients (`retry:`). */
  retryMs: number;
  /** How long a subscriber being ended has to take its last message before its connection is cut. */
  closeGraceMs: number;
}

export const defaultEventStreamOptions: EventStreamOptions = {
  queueMessages: 1_000,
  queueBytes: 4 * 1024 * 1024,
  heartbeatMs: 15_000,
  retryMs: 3_000,
  closeGraceMs: 5_000,
};

export interface EventStreamDeps {
  bus: Bus;
  sessions: ApiSessionStore;
  sessionTimeoutSeconds: number;
  logger: Logger;
  options?: Partial<EventStreamOptions>;
}

/** Writes at most this much per `res.write` when the queue holds several messages. */
const writeBatchBytes = 64 * 1024;

/** One subscriber: its follower, its bounded queue, its socket. */
class Subscriber {
  private readonly queue: SubscriberQueue;
  private follower?: Follower;
  private waitingForDrain = false;
  private heartbeat?: NodeJS.Timeout;
  private lastWrite = Date.now();
  private lastSessionCheck = Date.now();
  /** Set once the subscriber is being ended: nothing more is queued. */
  private ending = false;
  /**
   * Replaying the backlog it asked for (Last-Event-ID): paced, never too slow. Until the follower
   * reaches `replayHead` (the stream's newest position when last asked) and finds nothing newer.
   */
  private replaying = false;
  private replayHead: number | undefined;
  private headAsked = false;
  private lastSequence = 0;
  /** The follower is held back until the socket took what waits. */
  private held = false;
  private closed = false;
  readonly done: Promise<void>;
  private resolveDone!: () => void;

  constructor(
    private readonly deps: EventStreamDeps,
    private readonly options: EventStreamOptions,
    private readonly res: Response,
    private readonly selection: StreamSelection,
    private readonly token: string | undefined,
  ) {
    this.queue = new SubscriberQueue(options.queueMessages, options.queueBytes);
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    res.once('close', () => this.cleanup());
  }

  /** Follows the feed; throws (before anything is written) when the bus cannot. */
  async start(afterSequence: number | undefined): Promise<void> {
    const { bus } = this.deps;
    if (!bus.follow)
      throw new ApiError('NOT_IMPLEMENTED', { code: 'UNHANDLED', message: 'this bus cannot follow events' });
    this.replaying = afterSequence !== undefined;
    try {
      this.follower = await bus.follow(
        [changeFeedSubject],
        {
          ...(afterSequence !== undefined ? { afterSequence } : {}),
          onLost: ({ afterSequence: after, resumesAt }) =>
            this.enqueue(
              errorMessage(
                'EVENTS_LOST',
                `the events after ${after} are no longer held; the stream goes on from ${resumesAt}`,
                { afterSequence: after, resumesAt },
              ),
            ),
        },
        (event, sequence) => this.onEvent(event.data, sequence),
        (end) => {
          if (end.reason === 'failed' && !this.ending) {
            this.deps.logger.warn({ err: end.error }, 'the change feed follower failed; ending its subscriber');
            this.end('FEED_INTERRUPTED', 'the change feed was interrupted; reconnect with Last-Event-ID to resume');
          }
        },
      );
    } catch (err) {
      if (err instanceof ApiError) throw err;
      this.deps.logger.warn({ err }, 'could not follow the change feed');
      throw new ApiError('SERVICE_UNAVAILABLE', {
        code: 'SERVICE_UNAVAILABLE',
        message: 'the change feed is not available, retry later',
      });
    }
    if (this.closed) {
      // The client left while the follower started.
      await this.follower.stop();
      return;
    }
    if (this.ending) return;
    if (this.replaying) this.askHead();
    this.writeHead();
    this.heartbeat = setInterval(() => void this.beat(), Math.max(10, Math.floor(this.options.heartbeatMs / 2)));
    this.heartbeat.unref();
    this.pump();
  }

  private writeHead(): void {
    const { res } = this;
    if (res.headersSent) return;
    res.statusCode = 200;
    res.setHeader('content-type', 'text/event-stream; charset=utf-8');
    res.setHeader('connection', 'keep-alive');
    // Proxies must pass each message on as it comes.
    res.setHeader('x-accel-buffering', 'no');
    res.socket?.setNoDelay(true);
    res.write(`${sseRetry(this.options.retryMs)}${sseComment('following the change feed')}`);
    this.lastWrite = Date.now();
  }

  private onEvent(data: unknown, sequence: number): void {
    if (this.ending) return;
    this.lastSequence = sequence;
    if (this.replaying && this.replayHead !== undefined && sequence >= this.replayHead) this.askHead();
    const change = changeOf(data);
    if (!change || !selects(this.selection, change)) return;
    this.enqueue(changeMessage(change, sequence));
  }

  /** Whether the replay reached the stream's newest position: then the live feed's rules apply. */
  private askHead(): void {
    if (this.headAsked || !this.follower) return;
    this.headAsked = true;
    this.follower.head().then(
      (head) => {
        this.headAsked = false;
        if (!this.replaying) return;
        this.replayHead = head;
        // Caught up, and what the replay queued past the live bounds has gone to the socket: from
        // here on the live feed's limit applies (checked again once the socket took the rest).
        if (this.lastSequence >= head && !this.held && !this.queue.halfFull) this.replaying = false;
      },
      (err: unknown) => {
        // Asked again at the next event; until then the replay stays paced.
        this.headAsked = false;
        this.deps.logger.debug({ err }, 'could not read the change feed head');
      },
    );
  }

  private enqueue(message: string): void {
    if (this.ending) return;
    if (this.replaying) {
      this.queue.push(message, true);
      if (!this.held && this.queue.halfFull) {
        this.held = true;
        this.follower?.pause();
      }
      this.pump();
      return;
    }
    if (!this.queue.push(message)) {
      this.end(
        'SLOW_CONSUMER',
        `the subscriber did not keep up: more than ${this.queue.maxMessages} events or ${this.queue.maxBytes} bytes waited for it; ` +
          'reconnect with Last-Event-ID to resume',
      );
      return;
    }
    this.pump();
  }

  /** Writes what is queued while the socket takes it; waits for `drain` when it does not. */
  private pump(): void {
    const { res } = this;
    if (this.waitingForDrain || this.closed || !res.headersSent || res.writableEnded) return;
    while (this.queue.length > 0) {
      let chunk = this.queue.shift()!;
      while (this.queue.length > 0 && chunk.length < writeBatchBytes) chunk += this.queue.shift()!;
      this.lastWrite = Date.now();
      if (!res.write(chunk)) {
        this.waitingForDrain = true;
        res.once('drain', () => {
          this.waitingForDrain = false;
          this.pump();
        });
        return;
      }
    }
    // The socket took everything: a held follower goes on from where it stopped.
    if (this.held && !this.ending) {
      this.held = false;
      this.follower?.resume();
    }
    if (this.replaying && this.replayHead !== undefined && this.lastSequence >= this.replayHead) this.askHead();
  }

  /** Keeps the connection alive, and the subscriber's API session checked (and in use) while it listens. */
  private async beat(): Promise<void> {
    if (this.ending || this.closed) return;
    if (this.token && Date.now() - this.lastSessionCheck >= this.options.heartbeatMs) {
      this.lastSessionCheck = Date.now();
      const session = await this.deps.sessions
        .touch(this.token, this.deps.sessionTimeoutSeconds)
        .catch(() => undefined); // Redis unreachable: the session is checked again at the next beat.
      if (session === null || (session && !session.isAdmin)) {
        this.end('SESSION_ENDED', 'the API session of this subscriber ended or lost admin rights');
        return;
      }
    }
    if (this.ending || this.closed || Date.now() - this.lastWrite < this.options.heartbeatMs) return;
    if (this.queue.length === 0 && !this.waitingForDrain && !this.res.writableEnded) {
      this.lastWrite = Date.now();
      this.res.write(sseComment('keepalive'));
    }
  }

  /**
   * Ends the subscriber with a final `event: error` naming the reason. What still waited is
   * dropped; a socket that does not take the last message within the grace is cut.
   */
  end(code: StreamErrorCode, message: string): void {
    if (this.ending || this.closed) return;
    this.ending = true;
    this.queue.clear();
    void this.follower?.stop();
    if (code === 'SLOW_CONSUMER') this.deps.logger.warn({ code }, 'event stream subscriber disconnected: too slow');
    else this.deps.logger.info({ code }, 'event stream subscriber ended');
    const { res } = this;
    if (!res.writableEnded) {
      this.writeHead();
      res.end(errorMessage(code, message));
    }
    setTimeout(() => {
      if (!this.closed) res.destroy();
    }, this.options.closeGraceMs).unref();
  }

  /** Ends the subscriber without an error (the gateway stops): it reconnects elsewhere. */
  stop(): void {
    if (this.ending || this.closed) return;
    this.ending = true;
    this.queue.clear();
    void this.follower?.stop();
    if (!this.res.writableEnded) this.res.end(sseComment('the gateway is stopping; reconnect with Last-Event-ID'));
    setTimeout(() => {
      if (!this.closed) this.res.destroy();
    }, this.options.closeGraceMs).unref();
  }

  private cleanup(): void {
    if (this.closed) return;
    this.closed = true;
    this.ending = true;
    clearInterval(this.heartbeat);
    this.queue.clear();
    const stopping = this.follower?.stop() ?? Promise.resolve();
    void stopping.catch(() => undefined).finally(() => this.resolveDone());
  }
}

/** The subscribers of this gateway process, and the handler that adds them. */
export class EventStreams {
  private readonly subscribers = new Set<Subscriber>();
  private readonly options: EventStreamOptions;

  constructor(private readonly deps: EventStreamDeps) {
    this.options = { ...defaultEventStreamOptions, ...deps.options };
  }

  /** Subscribers connected now. */
  get size(): number {
    return this.subscribers.size;
  }

  readonly handler: StreamingHandler = {
    kind: 'stream',
    serve: (request, exchange) => this.serve(request, exchange),
  };

  private async serve(request: OperationRequest, { req, res }: { req: Request; res: Response }): Promise<void> {
    const header = req.headers['last-event-id'];
    const parsed = streamRequestOf(request.query, typeof header === 'string' ? header : undefined);
    const subscriber = new Subscriber(this.deps, this.options, res, parsed.selection, request.caller?.token);
    this.subscribers.add(subscriber);
    try {
      await subscriber.start(parsed.afterSequence);
      await subscriber.done;
    } finally {
      this.subscribers.delete(subscriber);
    }
  }

  /** Ends every subscriber (the gateway stops) and waits, within a deadline, until they are gone. */
  async closeAll(timeoutMs = 5_000): Promise<void> {
    const open = [...this.subscribers];
    for (const s of open) s.stop();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(open.map((s) => s.done)),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
