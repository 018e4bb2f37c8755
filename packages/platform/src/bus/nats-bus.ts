import {
  AckPolicy,
  type ConsumerInfo,
  type ConsumerMessages,
  DeliverPolicy,
  JSONCodec,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  NatsError,
  RetentionPolicy,
  StorageType,
  type Subscription,
  ConsumerEvents,
  connect,
  createInbox,
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
  RequestHandler,
  Served,
  Tail,
} from './bus.ts';
import { NoRespondersError, RequestTimeoutError, RetryEvents } from './bus.ts';
import { observeBusRequest } from '../metrics.ts';
import { fromBusReply, toBusReply, toFailure } from './reply.ts';

const codec = JSONCodec<unknown>();

interface PendingRequest {
  subject: string;
  resolve: (data: Uint8Array) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * How long a delivered event may stay unacknowledged before JetStream gives it to another replica:
 * the bound on how long a killed consumer replica holds events back. Live replicas extend it
 * every `heartbeatMs` for the events they hold.
 */
const ackWaitMs = 4_000;
const heartbeatMs = 1_000;
/** Longest a replica keeps extending the deadline of a batch it handles (consumer statements time out before). */
const maxHoldMs = 35_000;
/** Events pulled and handled at a time. */
const batchSize = 100;

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
  private readonly streamName: string;
  /**
   * Requests in flight, keyed by the last token of their reply subject. One subscription takes
   * every reply: nats.js's own `request` makes a deferred, a timer promise and a cancellation
   * error (with its stack) per request, which showed in the gateway's profile.
   */
  private readonly pending = new Map<string, PendingRequest>();
  private readonly inbox = createInbox();
  private replies?: Subscription;
  private nextRequest = 0;
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

  request(subject: string, payload: unknown, options: { timeoutMs?: number } = {}): Promise<unknown> {
    return observeBusRequest(subject, async () => {
      const data = await this.requestData(subject, codec.encode(payload ?? null), options.timeoutMs ?? 10_000);
      return fromBusReply(codec.decode(data) as BusReply);
    });
  }

  /** One request/reply over the shared reply subscription; the reply's bytes. */
  private requestData(subject: string, data: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    this.replies ??= this.nc.subscribe(`${this.inbox}.*`, {
      callback: (err, msg) => {
        if (err) return;
        const key = msg.subject.slice(this.inbox.length + 1);
        const waiting = this.pending.get(key);
        if (!waiting) return; // timed out meanwhile
        this.pending.delete(key);
        clearTimeout(waiting.timer);
        // The server answers a request nobody serves with a 503 status message (no responders).
        if (msg.headers?.hasError && msg.headers.code === 503) waiting.reject(new NoRespondersError(waiting.subject));
        else waiting.resolve(msg.data);
      },
    });
    const key = (this.nextRequest = (this.nextRequest + 1) % Number.MAX_SAFE_INTEGER).toString(36);
    return new Promise<Uint8Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(key);
        reject(new RequestTimeoutError(subject));
      }, timeoutMs);
      this.pending.set(key, { subject, resolve, reject, timer });
      try {
        this.nc.publish(this.subject(subject), data, { reply: `${this.inbox}.${key}` });
      } catch (err) {
        this.pending.delete(key);
        clearTimeout(timer);
        reject(err);
      }
    });
  }

  serve(subject: string, queue: string, handler: RequestHandler): Served {
    const prefix = this.options.namespace ? `${this.options.namespace}.` : '';
    const inFlight = new Set<Promise<unknown>>();
    const sub = this.nc.subscribe(this.subject(subject), {
      queue,
      callback: (err, msg) => {
        if (err) {
          this.options.logger.error({ err, subject }, 'subscription error');
          return;
        }
        const local = prefix && msg.subject.startsWith(prefix) ? msg.subject.slice(prefix.length) : msg.subject;
        const work = toBusReply(() => handler(codec.decode(msg.data), local), this.options.logger, local).then(
          (reply) => {
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
          },
        );
        inFlight.add(work);
        void work.finally(() => inFlight.delete(work));
      },
    });
    this.subs.add(sub);
    return {
      drain: async () => {
        if (!sub.isClosed()) await sub.drain();
        await Promise.allSettled([...inFlight]);
        this.subs.delete(sub);
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
      const settle = (m: JsMsg, retry: boolean, attempt: number) => {
        if (retry) m.nak(Math.min(10_000, 500 * attempt));
        else m.ack();
        inHand.delete(m);
      };
      try {
        if (deliveries.length > 0) await options.handler(deliveries);
        for (const d of deliveries) for (const m of byId.get(d.event.id) ?? []) settle(m, false, d.attempt);
      } catch (err) {
        const retry = err instanceof RetryEvents ? err.eventIds : undefined;
        if (!retry) log.warn({ err, durable }, 'event batch failed; redelivering');
        for (const d of deliveries)
          for (const m of byId.get(d.event.id) ?? []) settle(m, !retry || retry.has(d.event.id), d.attempt);
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
    for (const [key, waiting] of this.pending) {
      this.pending.delete(key);
      clearTimeout(waiting.timer);
      waiting.reject(new RequestTimeoutError(waiting.subject));
    }
    if (!this.nc.isClosed()) await this.nc.drain();
  }
}
