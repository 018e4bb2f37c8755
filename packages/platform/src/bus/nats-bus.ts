import {
  AckPolicy,
  type ConsumerInfo,
  type ConsumerMessages,
  type Consumer as JsConsumer,
  DeliverPolicy,
  JSONCodec,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type Msg,
  type NatsConnection,
  NatsError,
  RetentionPolicy,
  StorageType,
  type Subscription,
  ConsumerEvents,
  DebugEvents,
  Events,
  connect,
  createInbox,
  headers,
  type MsgHdrs,
  nanos,
} from 'nats';
import { eventStream } from '@ziti/contracts';
import type { Logger } from '../logger.ts';
import type {
  Bus,
  BusReply,
  Consumer,
  EventConsumerOptions,
  EventDelivery,
  EventEnvelope,
  FollowEnd,
  FollowOptions,
  Follower,
  RequestHandler,
  RequestOptions,
  Served,
  Tail,
} from './bus.ts';
import { NoRespondersError, RequestTimeoutError, RetryEvents, subjectMatches } from './bus.ts';
import { observeBusRequest } from '../metrics.ts';
import {
  fromBusReply,
  requestBudgetMs,
  requestDeadlineHeader,
  requestDeadlineHeaderValue,
  requestDeadlineOf,
  requestMetaHeader,
  requestMetaOf,
  toBusReply,
  toFailure,
} from './reply.ts';
import { currentRequestMeta } from '../causality.ts';

const codec = JSONCodec<unknown>();

/** One request in flight: one or more sends (`retry`), each with a reply key of its own. */
interface PendingRequest {
  subject: string;
  resolve: (data: Uint8Array) => void;
  reject: (err: Error) => void;
  /** The request's deadline (`timeoutMs`). */
  timer: NodeJS.Timeout;
  /** The next send of a request that may be repeated. */
  resend?: NodeJS.Timeout;
  /** The reply keys of its sends. */
  keys: string[];
  /** Sends that have not answered "no responders" (the server's 503 status message). */
  outstanding: number;
  /** A repeat went to every replica (`repeatSubject`): it holds one of `maxRepeatsToAll` until done. */
  toAll: boolean;
  /** Whether a reply ends the request (`retry.settles`); one that does not is kept here. */
  settles?: (reply: BusReply) => boolean;
  unsettled?: Uint8Array;
  /** A further send is scheduled. */
  resending: boolean;
  done: boolean;
}

/**
 * The subject a repeated request goes to: every replica of the owner subscribes to it outside the
 * queue group, so a repeat reaches each live replica instead of NATS's random pick of one, which
 * may be the very replica that holds the first send (frozen, hung on a dependency, being killed)
 * with its connection still up. The first reply wins; the others are dropped.
 */
export const repeatSubject = (subject: string) => `repeat.${subject}`;

/**
 * The most requests of one process whose repeat went to every replica at once; beyond it a repeat
 * goes to the queue group as the first send did, so a slow cluster (every request late) is not
 * multiplied by its replica count.
 */
export const maxRepeatsToAll = 32;

/**
 * A request made while this process has no connection to NATS (lost, reconnecting, or closed):
 * it is answered at once instead of waiting for its timeout, as the owner's being down is (a
 * `NoRespondersError`: 503 SERVICE_UNAVAILABLE at the gateway). Requests in flight when the
 * connection drops end with it too: their replies can no longer reach this process.
 */
export class BusUnavailableError extends NoRespondersError {
  constructor(subject: string) {
    super(subject);
    this.message = `no connection to NATS (request to ${subject})`;
    this.name = 'BusUnavailableError';
  }
}

/**
 * How long a delivered event may stay unacknowledged before JetStream gives it to another replica:
 * the bound on how long a killed consumer replica holds events back, so that read models stay
 * within 2 s of their owners while a replica crashes (test/e2e/read-model-lag.test.ts; at 4 s its
 * events' lag was 4–5 s). Live replicas extend it every `heartbeatMs` for the batch they handle;
 * a replica stalled past it (a blocked event loop) sees the batch handled elsewhere too, which
 * positions make harmless (a redelivery).
 */
const ackWaitMs = 1_500;
const heartbeatMs = 500;
/** Longest a replica keeps extending the deadline of a batch it handles (consumer statements time out before). */
const maxHoldMs = 35_000;
/** Events pulled and handled at a time. */
const batchSize = 100;
/** How long the server keeps a follower's consumer whose process stopped pulling (it died). */
const followInactiveMs = 30_000;
/** Events one pull of a follower asks for: what may still arrive after it is paused. */
const followBatch = 64;

export interface NatsBusOptions {
  url: string;
  /** Client name shown by the NATS server. */
  name: string;
  /**
   * Prefixes every subject and the stream name, so several deployments (or test runs) can share
   * one NATS server without seeing each other. Empty in a normal deployment.
   */
  namespace?: string;
  logger: Logger;
  /** Longest a replica keeps extending the ack deadline of a batch it handles (default 35 s). */
  maxHoldMs?: number;
}

/** The cluster bus: NATS request/reply with queue groups, JetStream for durable events. */
export class NatsBus implements Bus {
  private readonly subs = new Set<Subscription>();
  /** The `onGap` of every signal listener, told on each reconnect. */
  private readonly signalGaps = new Set<() => void>();
  private readonly streamName: string;
  /**
   * Requests in flight, keyed by the last token of their reply subject. One subscription takes
   * every reply: nats.js's own `request` makes a deferred, a timer promise and a cancellation
   * error (with its stack) per request, which showed in the gateway's profile.
   */
  private readonly pending = new Map<string, PendingRequest>();
  /** Requests in flight whose repeat went to every replica (`maxRepeatsToAll`). */
  private repeatsToAll = 0;
  private readonly inbox = createInbox();
  private replies?: Subscription;
  private nextRequest = 0;
  /** Whether the connection to NATS is up (false while it is lost or reconnecting, and once closed). */
  private connected = true;
  private js: JetStreamClient;
  private streamReady?: Promise<void>;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly options: NatsBusOptions,
  ) {
    this.js = nc.jetstream();
    this.streamName = options.namespace
      ? `${eventStream.name}_${options.namespace.replace(/[^A-Za-z0-9_-]/g, '_')}`
      : eventStream.name;
    this.watchConnection();
  }

  /**
   * Follows the connection's status: when it drops, requests are answered at once (and those in
   * flight end) until it is back; each transition is logged once.
   */
  private watchConnection(): void {
    void (async () => {
      for await (const status of this.nc.status()) {
        if (status.type === Events.Disconnect || status.type === DebugEvents.StaleConnection) this.lost();
        else if (status.type === Events.Reconnect) {
          if (!this.connected) {
            this.connected = true;
            this.options.logger.info('the NATS connection is back');
          }
          // Signals published while the connection was down never reached this process.
          for (const gap of [...this.signalGaps]) gap();
        }
      }
    })().catch(() => undefined);
    void this.nc.closed().then(() => {
      this.connected = false;
    });
  }

  private lost(): void {
    if (this.connected && !this.nc.isClosed())
      this.options.logger.warn(
        'lost the NATS connection; requests answer 503 SERVICE_UNAVAILABLE at once until it is back',
      );
    this.connected = false;
    // Their replies would come to a subscription the server no longer has.
    for (const waiting of new Set(this.pending.values()))
      this.finish(waiting, new BusUnavailableError(waiting.subject));
  }

  /** Whether requests can be sent now (the connection is up). */
  get available(): boolean {
    return this.connected && !this.nc.isClosed();
  }

  static async connect(options: NatsBusOptions): Promise<NatsBus> {
    const nc = await connect({
      servers: options.url,
      name: options.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // nats.js otherwise makes an Error (a stack trace) for every request, in case it times out;
      // our timeouts name their subject instead.
      noAsyncTraces: true,
    });
    return new NatsBus(nc, options);
  }

  private subject(subject: string): string {
    return this.options.namespace ? `${this.options.namespace}.${subject}` : subject;
  }

  request(subject: string, payload: unknown, options: RequestOptions = {}): Promise<unknown> {
    return observeBusRequest(subject, async () => {
      const data = await this.requestData(subject, codec.encode(payload ?? null), options);
      return fromBusReply(codec.decode(data) as BusReply);
    });
  }

  /** Ends a request in flight: its reply's bytes, or its failure; its sends are forgotten. */
  private finish(waiting: PendingRequest, outcome: Uint8Array | Error): void {
    if (waiting.done) return;
    waiting.done = true;
    if (waiting.toAll) this.repeatsToAll--;
    for (const key of waiting.keys) this.pending.delete(key);
    clearTimeout(waiting.timer);
    clearTimeout(waiting.resend);
    if (outcome instanceof Error) waiting.reject(outcome);
    else waiting.resolve(outcome);
  }

  /**
   * One request/reply over the shared reply subscription; the reply's bytes. Without a connection
   * it fails at once (`BusUnavailableError`). With `retry`, the request is sent again after each
   * `afterMs` without a reply (up to `attempts` sends) and the first reply of any send wins; a
   * "no responders" answer ends it only when no other send is still out.
   */
  private requestData(subject: string, data: Uint8Array, options: RequestOptions): Promise<Uint8Array> {
    if (!this.available) return Promise.reject(new BusUnavailableError(subject));
    this.replies ??= this.nc.subscribe(`${this.inbox}.*`, {
      callback: (err, msg) => {
        if (err) return;
        const key = msg.subject.slice(this.inbox.length + 1);
        const waiting = this.pending.get(key);
        if (!waiting) return; // answered, timed out or failed meanwhile
        // The server answers a request nobody serves with a 503 status message (no responders).
        if (msg.headers?.hasError && msg.headers.code === 503) {
          this.pending.delete(key);
          if (--waiting.outstanding === 0)
            this.finish(waiting, waiting.unsettled ?? new NoRespondersError(waiting.subject));
          return;
        }
        if (waiting.settles && !waiting.settles(codec.decode(msg.data) as BusReply)) {
          // Another send of the same write holds its key: its own reply is the outcome, if it comes
          // (or a later send finds the outcome kept by then).
          this.pending.delete(key);
          waiting.unsettled = msg.data;
          if (--waiting.outstanding === 0 && !waiting.resending) this.finish(waiting, msg.data);
          return;
        }
        this.finish(waiting, msg.data);
      },
    });
    // A request made on behalf of work with a deadline waits no longer than that work's caller.
    const timeoutMs = requestBudgetMs(options.timeoutMs);
    const retry = options.retry;
    const meta = currentRequestMeta();
    const hdrs: MsgHdrs = headers();
    if (meta) hdrs.set(requestMetaHeader, JSON.stringify(meta));
    hdrs.set(requestDeadlineHeader, requestDeadlineHeaderValue(timeoutMs));
    return new Promise<Uint8Array>((resolve, reject) => {
      const waiting: PendingRequest = {
        subject,
        resolve,
        reject,
        timer: setTimeout(() => this.finish(waiting, waiting.unsettled ?? new RequestTimeoutError(subject)), timeoutMs),
        keys: [],
        outstanding: 0,
        toAll: false,
        ...(retry?.settles ? { settles: retry.settles } : {}),
        resending: false,
        done: false,
      };
      const started = Date.now();
      /** One send: the first to the queue group (one replica); a repeat to every replica while `maxRepeatsToAll` allows. */
      const send = (repeat: boolean): boolean => {
        const key = (this.nextRequest = (this.nextRequest + 1) % Number.MAX_SAFE_INTEGER).toString(36);
        waiting.keys.push(key);
        waiting.outstanding++;
        this.pending.set(key, waiting);
        let to = subject;
        if (repeat && (waiting.toAll || this.repeatsToAll < maxRepeatsToAll)) {
          if (!waiting.toAll) this.repeatsToAll++;
          waiting.toAll = true;
          to = repeatSubject(subject);
        }
        try {
          this.nc.publish(this.subject(to), data, {
            reply: `${this.inbox}.${key}`,
            headers: hdrs,
          });
          return true;
        } catch (err) {
          // The connection closed under it.
          this.finish(waiting, this.available ? (err as Error) : new BusUnavailableError(subject));
          return false;
        }
      };
      const scheduleResend = (sent: number) => {
        if (!retry || sent >= retry.attempts || retry.afterMs <= 0) return;
        // A send that could not be answered before the deadline is not made.
        if (Date.now() - started + retry.afterMs >= timeoutMs) return;
        waiting.resending = true;
        waiting.resend = setTimeout(() => {
          waiting.resending = false;
          if (waiting.done) return;
          if (send(true)) scheduleResend(sent + 1);
        }, retry.afterMs);
      };
      if (send(false)) scheduleResend(1);
    });
  }

  /** A core NATS publish: every listener connected now gets it once; nothing is kept. */
  signal(subject: string, payload: unknown): void {
    if (!this.available) return;
    try {
      this.nc.publish(this.subject(subject), codec.encode(payload ?? null));
    } catch (err) {
      this.options.logger.warn({ err, subject }, 'a signal could not be published');
    }
  }

  listen(subject: string, onSignal: (payload: unknown) => void, onGap: () => void): Tail {
    const sub = this.nc.subscribe(this.subject(subject), {
      callback: (err, msg) => {
        if (err) return;
        let payload: unknown;
        try {
          payload = codec.decode(msg.data);
        } catch (decodeError) {
          this.options.logger.warn({ err: decodeError, subject }, 'a signal could not be decoded');
          return;
        }
        try {
          onSignal(payload);
        } catch (handlerError) {
          this.options.logger.error({ err: handlerError, subject }, 'a signal listener failed');
        }
      },
    });
    this.subs.add(sub);
    this.signalGaps.add(onGap);
    return {
      stop: async () => {
        this.signalGaps.delete(onGap);
        this.subs.delete(sub);
        sub.unsubscribe();
      },
    };
  }

  /**
   * Serves `subject` in `queue` (each request reaches one replica), and its repeats
   * (`repeatSubject`) outside it: a repeat reaches every replica, and the handler sees the
   * request's own subject either way.
   */
  serve(subject: string, queue: string, handler: RequestHandler): Served {
    const prefix = this.options.namespace ? `${this.options.namespace}.` : '';
    const repeatPrefix = repeatSubject('');
    const inFlight = new Set<Promise<unknown>>();
    const callback = (err: NatsError | null, msg: Msg) => {
      if (err) {
        this.options.logger.error({ err, subject }, 'subscription error');
        return;
      }
      let local = prefix && msg.subject.startsWith(prefix) ? msg.subject.slice(prefix.length) : msg.subject;
      if (local.startsWith(repeatPrefix)) local = local.slice(repeatPrefix.length);
      const meta = requestMetaOf(msg.headers?.get(requestMetaHeader));
      const deadline = requestDeadlineOf(msg.headers?.get(requestDeadlineHeader));
      const work = toBusReply(
        () => handler(codec.decode(msg.data), local),
        this.options.logger,
        local,
        meta,
        deadline,
      ).then((reply) => {
        if (!msg.reply) return;
        try {
          msg.respond(codec.encode(reply));
        } catch (err) {
          // e.g. a reply over the server's max_payload: the caller gets an error, not a timeout.
          this.options.logger.error({ err, subject: local }, 'reply could not be sent');
          try {
            msg.respond(codec.encode(toFailure(err)));
          } catch {
            // The connection is gone: the caller times out (503), this process carries on.
          }
        }
      });
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    };
    const subs = [
      this.nc.subscribe(this.subject(subject), { queue, callback }),
      this.nc.subscribe(this.subject(repeatSubject(subject)), { callback }),
    ];
    for (const sub of subs) this.subs.add(sub);
    return {
      drain: async () => {
        await Promise.all(subs.map((sub) => (sub.isClosed() ? undefined : sub.drain())));
        await Promise.allSettled([...inFlight]);
        for (const sub of subs) this.subs.delete(sub);
      },
    };
  }

  private ensureStream(): Promise<void> {
    this.streamReady ??= (async () => {
      const jsm = await this.nc.jetstreamManager();
      const config = {
        name: this.streamName,
        subjects: eventStream.subjects.map((s) => this.subject(s)),
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        duplicate_window: nanos(2 * 60_000),
        max_age: nanos(7 * 24 * 3600_000),
      };
      try {
        await jsm.streams.info(this.streamName);
        await jsm.streams.update(this.streamName, config);
      } catch (err) {
        if (err instanceof NatsError && (err.api_error?.err_code === 10059 || err.code === '404')) {
          await jsm.streams.add(config);
        } else throw err;
      }
    })().catch((err) => {
      this.streamReady = undefined;
      throw err;
    });
    return this.streamReady;
  }

  async publish(subject: string, event: EventEnvelope): Promise<void> {
    await this.ensureStream();
    await this.js.publish(this.subject(subject), codec.encode(event), { msgID: event.id });
  }

  /**
   * Pipelined: every publish is written to the connection in order before any acknowledgement is
   * awaited, so a batch costs one round trip, not one per event, and the stream stores them in
   * that order. When one fails the whole batch is reported failed; publishing it again is safe
   * (JetStream drops what it already holds by `msgID`), and consumers take an event stored late
   * after a later one in their stride (their cursors keep gaps: `events/consumer.ts`).
   */
  async publishMany(messages: readonly { subject: string; event: EventEnvelope }[]): Promise<void> {
    await this.ensureStream();
    const acks = messages.map(({ subject, event }) =>
      this.js.publish(this.subject(subject), codec.encode(event), { msgID: event.id }),
    );
    const outcomes = await Promise.allSettled(acks);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * One ordered (ephemeral, server-side flow-controlled) consumer per subject, delivering from the
   * next event on: NATS 2.9 takes one filter per consumer, and each subject is one owner's stream of
   * positions. A consumer that nats.js had to recreate (a reconnect, a missed heartbeat) resumes
   * where it was, but the view is told to forget all the same.
   */
  async tail(subjects: string[], onEvent: (event: EventEnvelope) => void, onReset: () => void): Promise<Tail> {
    await this.ensureStream();
    const running: { stop(): void; closed: Promise<unknown> }[] = [];
    for (const subject of subjects) {
      const consumer = await this.js.consumers.get(this.streamName, {
        filterSubjects: this.subject(subject),
        deliver_policy: DeliverPolicy.New,
      });
      const messages = await consumer.consume({
        callback: (m) => {
          let event: EventEnvelope;
          try {
            event = codec.decode(m.data) as EventEnvelope;
          } catch {
            onReset();
            return;
          }
          onEvent(event);
        },
      });
      void (async () => {
        for await (const status of await messages.status())
          if (status.type === ConsumerEvents.OrderedConsumerRecreated) onReset();
      })().catch(() => undefined);
      running.push({ stop: () => messages.stop(), closed: messages.closed() });
    }
    return {
      stop: async () => {
        for (const r of running) r.stop();
        await Promise.allSettled(running.map((r) => r.closed));
      },
    };
  }

  /**
   * One ordered consumer (ephemeral, in memory, no acknowledgements; nats.js recreates it after the
   * last stream sequence it delivered when it misses a heartbeat or the connection drops, so the
   * order has no gap) starting after `afterSequence`, or with the next event. One subject is
   * filtered by the server; several (NATS 2.9 takes one filter per consumer) are read from the
   * whole stream and filtered here, so their events still come in one stream order. The consumer is
   * deleted when stopped, and expires on the server within `followInactiveMs` if this process dies.
   * `pause` deletes it and `resume` makes another from the event after the last one delivered, so
   * a reader that cannot take more leaves the rest in the stream; each pull asks for at most
   * `followBatch` events.
   */
  async follow(
    subjects: string[],
    options: FollowOptions,
    onEvent: (event: EventEnvelope, sequence: number) => void,
    onEnd: (end: FollowEnd) => void,
  ): Promise<Follower> {
    await this.ensureStream();
    const jsm = await this.nc.jetstreamManager();
    const { state } = await jsm.streams.info(this.streamName);
    // From the next event published (a start position, so that a resume before the first event
    // delivered goes on from there too), or after the reader's position.
    let start = { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: state.last_seq + 1 };
    if (options.afterSequence !== undefined) {
      const after = options.afterSequence;
      // A position before what the stream still holds, or past its end (a stream made anew).
      if (after + 1 < state.first_seq || after > state.last_seq) {
        options.onLost?.({ afterSequence: after, resumesAt: state.first_seq });
        start = { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Math.max(1, state.first_seq) };
      } else start = { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 };
    }
    const prefix = this.options.namespace ? `${this.options.namespace}.` : '';
    const one = subjects.length === 1 ? this.subject(subjects[0]!) : undefined;
    let ended = false;
    const end = (result: FollowEnd) => {
      if (ended) return;
      ended = true;
      onEnd(result);
    };
    /** The stream sequence of the last message handed on (or skipped here): a resume starts after it. */
    let last: number | undefined;
    let stopped = false;
    /** The running consumer; each run is abandoned (its late messages ignored) once paused or stopped. */
    let run: { consumer: JsConsumer; messages: ConsumerMessages; over: boolean } | undefined;
    const open = async (from: { deliver_policy: DeliverPolicy; opt_start_seq: number }) => {
      const consumer = await this.js.consumers.get(this.streamName, {
        filterSubjects: one ?? eventStream.subjects.map((x) => this.subject(x))[0]!,
        ...from,
        inactive_threshold: followInactiveMs,
      });
      const current: { consumer: JsConsumer; messages?: ConsumerMessages; over: boolean } = { consumer, over: false };
      const messages = await consumer.consume({
        abort_on_missing_resource: true,
        max_messages: followBatch,
        callback: (m) => {
          if (ended || current.over) return;
          last = m.seq;
          if (!one) {
            const local = prefix && m.subject.startsWith(prefix) ? m.subject.slice(prefix.length) : m.subject;
            if (!subjects.some((pattern) => subjectMatches(pattern, local))) return;
          }
          let event: EventEnvelope;
          try {
            event = codec.decode(m.data) as EventEnvelope;
          } catch (err) {
            this.options.logger.error(
              { err, seq: m.seq, subject: m.subject },
              'undecodable message on the event stream; skipped',
            );
            return;
          }
          try {
            onEvent(event, m.seq);
          } catch (err) {
            current.over = true;
            messages.stop();
            end({ reason: 'failed', error: err instanceof Error ? err : new Error(String(err)) });
          }
        },
      });
      current.messages = messages;
      void messages.closed().then(
        (err) => {
          if (current.over) return;
          end(
            err ? { reason: 'failed', error: err } : { reason: 'failed', error: new Error('the event stream ended') },
          );
        },
        (err: unknown) => {
          if (!current.over) end({ reason: 'failed', error: err instanceof Error ? err : new Error(String(err)) });
        },
      );
      run = current as { consumer: JsConsumer; messages: ConsumerMessages; over: boolean };
    };
    const close = async () => {
      const r = run;
      run = undefined;
      if (!r || r.over) return;
      r.over = true;
      r.messages.stop();
      await r.messages.closed().catch(() => undefined);
      await r.consumer.delete().catch(() => undefined);
    };
    await open(start);
    /** Pauses and resumes one after the other, in the order asked. */
    let turn: Promise<void> = Promise.resolve();
    let paused = false;
    const queueTurn = (fn: () => Promise<void>) => {
      turn = turn.then(fn).catch((err: unknown) => {
        end({ reason: 'failed', error: err instanceof Error ? err : new Error(String(err)) });
      });
    };
    return {
      stop: async () => {
        if (stopped) return;
        stopped = true;
        await turn;
        await close();
        end({ reason: 'stopped' });
      },
      pause: () => {
        if (paused || stopped) return;
        paused = true;
        queueTurn(close);
      },
      resume: () => {
        if (!paused || stopped) return;
        paused = false;
        queueTurn(async () => {
          if (stopped || ended || run) return;
          const from =
            last === undefined ? start : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: last + 1 };
          await open(from);
        });
      },
      head: async () => (await jsm.streams.info(this.streamName)).state.last_seq,
    };
  }

  async consume(options: EventConsumerOptions): Promise<Consumer> {
    await this.ensureStream();
    const jsm = await this.nc.jetstreamManager();
    const durable = options.durable.replace(/[^A-Za-z0-9_-]/g, '_');
    const filter = this.subject(options.subject);
    const fresh = await this.ensureDurable(jsm, durable, filter);
    const consumer = await this.js.consumers.get(this.streamName, durable);
    const log = this.options.logger;
    const queue: JsMsg[] = [];
    const inHand = new Set<JsMsg>();
    let handling: JsMsg[] = [];
    let handlingSince = 0;
    let wake: (() => void) | undefined;
    let messages: ConsumerMessages | undefined;
    let stopped = false;
    // Only the batch being handled keeps its ack deadline alive, and only for `maxHoldMs`: events
    // of a replica that dies, or whose handler hangs, go to another replica within `ackWaitMs`.
    // Queued events are not extended: a busy replica lets others take them.
    const heartbeat = setInterval(() => {
      if (Date.now() - handlingSince > (this.options.maxHoldMs ?? maxHoldMs)) return;
      for (const m of handling) m.working();
    }, heartbeatMs);
    heartbeat.unref();

    // Pulls a batch only once the previous one was taken by the processor: a replica whose handler
    // hangs stops pulling, and what it had fetched but not started goes elsewhere after `ackWaitMs`.
    let drained: (() => void) | undefined;
    const reader = (async () => {
      while (!stopped) {
        try {
          if (queue.length > 0) {
            await new Promise<void>((r) => {
              drained = r;
            });
            drained = undefined;
            continue;
          }
          messages = await consumer.fetch({ max_messages: batchSize, expires: 5_000 });
          if (stopped) messages.stop();
          for await (const m of messages) {
            inHand.add(m);
            queue.push(m);
            wake?.();
          }
        } catch (err) {
          if (!stopped) log.warn({ err, durable }, 'event consumer interrupted; resuming');
          if (!stopped) await new Promise((r) => setTimeout(r, 250));
        }
      }
    })();

    const handle = async (batch: JsMsg[]) => {
      const deliveries: EventDelivery[] = [];
      const byId = new Map<string, JsMsg[]>();
      for (const m of batch) {
        let event: EventEnvelope;
        try {
          event = codec.decode(m.data) as EventEnvelope;
          if (typeof event?.id !== 'string' || typeof event.sequence !== 'number') throw new Error('not an event');
        } catch (err) {
          // Not an event envelope at all: no consumer version could ever process it.
          log.error(
            { err, durable, subject: m.subject, seq: m.seq },
            'undecodable message on the event stream; dropped',
          );
          m.term();
          inHand.delete(m);
          continue;
        }
        deliveries.push({ event, attempt: m.info.redeliveryCount });
        byId.set(event.id, [...(byId.get(event.id) ?? []), m]);
      }
      const settle = (m: JsMsg, retry: boolean, attempt: number, delayMs?: number) => {
        if (retry) m.nak(delayMs ?? Math.min(10_000, 500 * attempt));
        else m.ack();
        inHand.delete(m);
      };
      try {
        if (deliveries.length > 0) await options.handler(deliveries);
        for (const d of deliveries) for (const m of byId.get(d.event.id) ?? []) settle(m, false, d.attempt);
      } catch (err) {
        const retry = err instanceof RetryEvents ? err : undefined;
        if (!retry) log.warn({ err, durable }, 'event batch failed; redelivering');
        for (const d of deliveries)
          for (const m of byId.get(d.event.id) ?? [])
            settle(m, !retry || retry.eventIds.has(d.event.id), d.attempt, retry?.delayMs);
      }
    };

    const processor = (async () => {
      while (!stopped) {
        if (queue.length === 0) {
          await new Promise<void>((r) => {
            wake = r;
          });
          wake = undefined;
          continue;
        }
        handling = queue.splice(0, batchSize);
        handlingSince = Date.now();
        drained?.();
        await handle(handling);
        handling = [];
      }
    })();

    return {
      fresh,
      pending: async () => (await consumer.info()).num_pending,
      stop: async () => {
        stopped = true;
        messages?.stop();
        wake?.();
        drained?.();
        await Promise.allSettled([reader, processor]);
        // Hand back what was fetched but not handled, so another replica gets it at once.
        for (const m of queue.splice(0)) m.nak();
        inHand.clear();
        clearInterval(heartbeat);
      },
    };
  }

  /**
   * Creates the shared durable, or brings an existing one to the wanted configuration. A filter
   * that cannot be changed in place means a new durable. Returns whether the durable is new (it
   * then delivers the stream from its start; the consumer skips positions it already applied).
   */
  private async ensureDurable(jsm: JetStreamManager, durable: string, filter: string): Promise<boolean> {
    const wanted = { ack_wait: nanos(ackWaitMs), max_ack_pending: 2_000, max_deliver: -1 };
    let info: ConsumerInfo | undefined;
    try {
      info = await jsm.consumers.info(this.streamName, durable);
    } catch (err) {
      if (!(err instanceof NatsError && (err.api_error?.err_code === 10014 || err.code === '404'))) throw err;
    }
    if (info) {
      const c = info.config;
      if (c.filter_subject !== filter) {
        try {
          await jsm.consumers.update(this.streamName, durable, { ...wanted, filter_subject: filter });
          this.options.logger.info({ durable, filter }, 'event consumer filter updated');
          return false;
        } catch {
          await jsm.consumers.delete(this.streamName, durable).catch(() => undefined);
          this.options.logger.warn({ durable, filter }, 'event consumer recreated for a new filter');
          info = undefined;
        }
      } else if (c.ack_wait !== wanted.ack_wait || c.max_ack_pending !== wanted.max_ack_pending) {
        await jsm.consumers.update(this.streamName, durable, wanted);
      }
      if (info) return false;
    }
    try {
      await jsm.consumers.add(this.streamName, {
        durable_name: durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: filter,
        ...wanted,
      });
      return true;
    } catch (err) {
      // Another replica created it first: that is the shared durable we want, and it resyncs.
      await jsm.consumers.info(this.streamName, durable).catch(() => {
        throw err;
      });
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.subs].map((s) => s.drain()));
    // Requests still waiting get their replies until the connection drains; then none can come.
    if (this.replies && !this.replies.isClosed()) await this.replies.drain().catch(() => undefined);
    for (const waiting of new Set(this.pending.values()))
      this.finish(waiting, new RequestTimeoutError(waiting.subject));
    if (!this.nc.isClosed()) await this.nc.drain();
  }
}
