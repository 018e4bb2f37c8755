import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  ErrorCode,
  JSONCodec,
  type JetStreamClient,
  type NatsConnection,
  NatsError,
  RetentionPolicy,
  StorageType,
  type Subscription,
  connect,
  nanos,
} from 'nats';
import { eventStream } from '@ziti/contracts';
import type { Logger } from '../logger.ts';
import type { Bus, BusReply, Consumer, EventConsumerOptions, EventEnvelope, RequestHandler, Served } from './bus.ts';
import { NoRespondersError, RequestTimeoutError } from './bus.ts';
import { fromBusReply, toBusReply } from './reply.ts';

const codec = JSONCodec<unknown>();

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
}

/** The cluster bus: NATS request/reply with queue groups, JetStream for durable events. */
export class NatsBus implements Bus {
  private readonly subs = new Set<Subscription>();
  private readonly streamName: string;
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
    });
    return new NatsBus(nc, options);
  }

  private subject(subject: string): string {
    return this.options.namespace ? `${this.options.namespace}.${subject}` : subject;
  }

  async request(subject: string, payload: unknown, options: { timeoutMs?: number } = {}): Promise<unknown> {
    const full = this.subject(subject);
    try {
      const msg = await this.nc.request(full, codec.encode(payload ?? null), { timeout: options.timeoutMs ?? 10_000 });
      return fromBusReply(codec.decode(msg.data) as BusReply);
    } catch (err) {
      if (err instanceof NatsError && err.code === ErrorCode.NoResponders) throw new NoRespondersError(subject);
      if (err instanceof NatsError && err.code === ErrorCode.Timeout) throw new RequestTimeoutError(subject);
      throw err;
    }
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
        const work = toBusReply(
          () => handler(codec.decode(msg.data), local),
          (e) => this.options.logger.error({ err: e, subject: local }, 'request handler failed'),
        ).then((reply) => {
          if (msg.reply) msg.respond(codec.encode(reply));
        });
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

  async consume(options: EventConsumerOptions): Promise<Consumer> {
    await this.ensureStream();
    const jsm = await this.nc.jetstreamManager();
    const durable = options.durable.replace(/[^A-Za-z0-9_-]/g, '_');
    const filter = this.subject(options.subject);
    try {
      await jsm.consumers.info(this.streamName, durable);
    } catch {
      try {
        await jsm.consumers.add(this.streamName, {
          durable_name: durable,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          filter_subject: filter,
          ack_wait: nanos(30_000),
          max_deliver: -1,
        });
      } catch (err) {
        // Another replica created it first: that is the shared durable we want.
        await jsm.consumers.info(this.streamName, durable).catch(() => {
          throw err;
        });
      }
    }
    const consumer = await this.js.consumers.get(this.streamName, durable);
    let messages: ConsumerMessages | undefined;
    let stopped = false;
    const loop = (async () => {
      while (!stopped) {
        try {
          messages = await consumer.consume({ max_messages: 64 });
          for await (const m of messages) {
            try {
              await options.handler(codec.decode(m.data) as EventEnvelope);
              m.ack();
            } catch (err) {
              this.options.logger.warn({ err, durable, subject: m.subject }, 'event handler failed; redelivering');
              m.nak(1_000);
            }
          }
        } catch (err) {
          if (!stopped) this.options.logger.warn({ err, durable }, 'event consumer interrupted; resuming');
        }
        if (!stopped) await new Promise((r) => setTimeout(r, 250));
      }
    })();
    return {
      stop: async () => {
        stopped = true;
        messages?.stop();
        await loop;
      },
    };
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.subs].map((s) => s.drain()));
    if (!this.nc.isClosed()) await this.nc.drain();
  }
}
