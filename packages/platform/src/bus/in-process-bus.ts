import { type Logger, createLogger } from '../logger.ts';
import type { Bus, Consumer, EventConsumerOptions, EventEnvelope, RequestHandler, Served, Tail } from './bus.ts';
import { NoRespondersError, RequestTimeoutError, subjectMatches } from './bus.ts';
import { observeBusRequest } from '../metrics.ts';
import { fromBusReply, toBusReply } from './reply.ts';

interface Subscription {
  subject: string;
  queue: string;
  handler: RequestHandler;
  inFlight: Set<Promise<unknown>>;
  active: boolean;
}

/**
 * The bus of `npm start`: every service in one process. Same semantics as the NATS bus where it
 * matters: queue groups share requests round-robin; an event is delivered to every durable
 * consumer and `publish` resolves only after each matching consumer has handled it, so the
 * outbox row stays unpublished (and is retried, counting attempts) until the event really landed. Payloads are
 * passed through JSON so no handler ever shares an object with its caller.
 */
export class InProcessBus implements Bus {
  private readonly subscriptions: Subscription[] = [];
  private readonly consumers = new Map<string, EventConsumerOptions>();
  private readonly tails = new Set<{ subjects: string[]; onEvent: (event: EventEnvelope) => void }>();
  /** Delivery attempts of events a consumer failed, by `<durable> <event id>` (redeliveries count up). */
  private readonly attempts = new Map<string, number>();
  private roundRobin = 0;
  private closed = false;
  private releaseEvents!: () => void;
  private readonly eventsOpen: Promise<void>;
  private readonly logger: Logger;

  /**
   * @param holdEvents hold published events until `openEvents()`, so that when every service
   *   starts in one process no event is published before all durable consumers are registered.
   * @param logger where failed handlers are logged (safely, like every log line).
   */
  constructor(options: { holdEvents?: boolean; logger?: Logger } = {}) {
    this.logger = options.logger ?? createLogger('bus');
    this.eventsOpen = new Promise((resolve) => {
      this.releaseEvents = resolve;
    });
    if (!options.holdEvents) this.releaseEvents();
  }

  openEvents(): void {
    this.releaseEvents();
  }

  request(subject: string, payload: unknown, options: { timeoutMs?: number } = {}): Promise<unknown> {
    return observeBusRequest(subject, () => this.send(subject, payload, options.timeoutMs ?? 10_000));
  }

  private async send(subject: string, payload: unknown, timeoutMs: number): Promise<unknown> {
    const candidates = this.subscriptions.filter((s) => s.active && subjectMatches(s.subject, subject));
    if (candidates.length === 0 || this.closed) throw new NoRespondersError(subject);
    const sub = candidates[this.roundRobin++ % candidates.length]!;
    const message = JSON.parse(JSON.stringify(payload ?? null));
    const work = toBusReply(() => sub.handler(message, subject), this.logger, subject);
    sub.inFlight.add(work);
    void work.finally(() => sub.inFlight.delete(work));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RequestTimeoutError(subject)), timeoutMs);
    });
    try {
      const reply = await Promise.race([work, timeout]);
      return fromBusReply(JSON.parse(JSON.stringify(reply)));
    } finally {
      clearTimeout(timer);
    }
  }

  serve(subject: string, queue: string, handler: RequestHandler): Served {
    const sub: Subscription = { subject, queue, handler, inFlight: new Set(), active: true };
    this.subscriptions.push(sub);
    return {
      drain: async () => {
        sub.active = false;
        await Promise.allSettled([...sub.inFlight]);
        const index = this.subscriptions.indexOf(sub);
        if (index >= 0) this.subscriptions.splice(index, 1);
      },
    };
  }

  async publish(subject: string, event: EventEnvelope): Promise<void> {
    await this.eventsOpen;
    for (const t of this.tails) if (t.subjects.some((pattern) => subjectMatches(pattern, subject))) t.onEvent(event);
    const failures: unknown[] = [];
    for (const [durable, consumer] of this.consumers) {
      if (!subjectMatches(consumer.subject, subject)) continue;
      const key = `${durable} ${event.id}`;
      const attempt = (this.attempts.get(key) ?? 0) + 1;
      try {
        await consumer.handler([{ event: JSON.parse(JSON.stringify(event)), attempt }]);
        this.attempts.delete(key);
      } catch (err) {
        this.attempts.set(key, attempt);
        failures.push(err);
      }
    }
    if (failures.length > 0) throw new AggregateError(failures, `event ${event.id} not handled by every consumer`);
  }

  async tail(subjects: string[], onEvent: (event: EventEnvelope) => void): Promise<Tail> {
    const t = { subjects, onEvent };
    this.tails.add(t);
    return {
      stop: async () => {
        this.tails.delete(t);
      },
    };
  }

  async consume(options: EventConsumerOptions): Promise<Consumer> {
    this.consumers.set(options.durable, options);
    return {
      // Nothing is published past a registered consumer in this process, and the outbox keeps
      // what was not delivered across restarts, so a consumer never misses events here.
      fresh: false,
      // `publish` hands every event to the consumer at once: nothing waits on a stream here.
      pending: async () => 0,
      stop: async () => {
        this.consumers.delete(options.durable);
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled(this.subscriptions.map((s) => Promise.allSettled([...s.inFlight])));
  }
}
