import { type Logger, createLogger } from '../logger.ts';
import type {
  Bus,
  Consumer,
  EventConsumerOptions,
  EventDelivery,
  EventEnvelope,
  FollowEnd,
  FollowOptions,
  Follower,
  RequestHandler,
  Served,
  Tail,
} from './bus.ts';
import { NoRespondersError, RequestTimeoutError, RetryEvents, subjectMatches } from './bus.ts';
import { observeBusRequest } from '../metrics.ts';
import { fromBusReply, requestBudgetMs, toBusReply } from './reply.ts';
import { currentRequestMeta } from '../causality.ts';

/** How much of the recent event stream the in-process bus keeps for `follow` (the window a reader can resume in). */
export interface FollowWindow {
  /** Most events kept (default 10 000). */
  events?: number;
  /** Most bytes of serialized events kept (default 32 MiB). */
  bytes?: number;
}

interface LoggedEvent {
  sequence: number;
  subject: string;
  id: string;
  /** The event as JSON: each reader gets its own copy. */
  json: string;
}

interface InProcessFollower {
  subjects: string[];
  /** The position of the last event delivered (or skipped). */
  cursor: number;
  /** Whether the first delivery (which checks the start position against the window) happened. */
  started: boolean;
  stopped: boolean;
  /** Held back by its reader: `deliver` waits for `resume`. */
  paused: boolean;
  onEvent: (event: EventEnvelope, sequence: number) => void;
  onEnd: (end: FollowEnd) => void;
  onLost?: FollowOptions['onLost'];
}

/**
 * The recent events in publishing order, each with its stream position, bounded by count and bytes:
 * the in-process stand-in for the JetStream stream that `follow` reads. Positions start at the
 * microsecond of the bus's creation, so a position from an earlier run of the process is always
 * older than the window of this one (its reader is told events may have been lost).
 */
class EventLog {
  private readonly entries: LoggedEvent[] = [];
  private head = 0;
  private bytes = 0;
  private readonly ids = new Set<string>();
  next: number;

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes: number,
  ) {
    // Never right after a position an earlier log of this process gave (two buses in one
    // millisecond): a reader of that log must be told it may have lost events.
    this.next = Math.max(Date.now() * 1000, EventLog.highest + 2);
  }

  /** The highest position any log of this process gave. */
  private static highest = 0;

  get size(): number {
    return this.entries.length - this.head;
  }

  /** The oldest position held (the next one when nothing is). */
  get oldest(): number {
    return this.size > 0 ? this.entries[this.head]!.sequence : this.next;
  }

  /** Appends an event unless it is already held (an outbox retry): JetStream's de-duplication by id. */
  append(subject: string, event: EventEnvelope): LoggedEvent | undefined {
    if (this.ids.has(event.id)) return undefined;
    const entry: LoggedEvent = { sequence: this.next++, subject, id: event.id, json: JSON.stringify(event) };
    EventLog.highest = Math.max(EventLog.highest, entry.sequence);
    this.entries.push(entry);
    this.ids.add(entry.id);
    this.bytes += entry.json.length;
    while (this.size > 0 && (this.size > this.maxEvents || (this.bytes > this.maxBytes && this.size > 1))) {
      const dropped = this.entries[this.head]!;
      this.entries[this.head++] = undefined as never;
      this.ids.delete(dropped.id);
      this.bytes -= dropped.json.length;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
    return entry;
  }

  /** The entry at a position, if held. */
  at(sequence: number): LoggedEvent | undefined {
    const index = this.head + (sequence - this.oldest);
    return sequence >= this.oldest && sequence < this.next ? this.entries[index] : undefined;
  }
}

interface Subscription {
  subject: string;
  queue: string;
  handler: RequestHandler;
  inFlight: Set<Promise<unknown>>;
  active: boolean;
}

/** How far behind a durable consumer may fall before its oldest events are dropped (see DurableQueue). */
export interface ConsumerBacklog {
  /** Most events queued for one durable consumer (default 10 000). */
  events?: number;
  /** Most bytes of serialized events queued for one durable consumer (default 32 MiB). */
  bytes?: number;
}

/** Events handed to a durable consumer at once (the NATS bus's batch). */
const batchSize = 100;

/** One event waiting in a durable consumer's queue. */
interface Queued {
  entry: LoggedEvent;
  /** Deliveries so far (the next one is `attempt + 1`). */
  attempt: number;
  /** Ends `publish`'s wait for this event's first delivery (set only while publish waits). */
  settled?: () => void;
}

interface ConsumerInstance {
  handler: EventConsumerOptions['handler'];
}

/**
 * A durable consumer of the in-process bus: its own ordered queue and its own redelivery, shared by
 * the instances registered under its name (replicas in one process take batches in turn), like a
 * JetStream durable. One batch is in flight at a time, so the consumer sees its events in publishing
 * order; what its handler hands back (`RetryEvents`, or the whole batch when it throws) goes back to
 * the head of the queue and comes again after a delay (as NATS's nak: 500 ms × attempt, at most
 * 10 s), before anything published after it. Nothing another consumer does delays it.
 *
 * Memory is bounded per durable (`ConsumerBacklog`, default 10 000 events or 32 MiB of JSON; an
 * event's JSON is held once, however many queues and the follow window hold it, so what waits takes
 * at most that much per durable, and usually far less, as consumers that keep up hold nothing).
 * JetStream keeps events for its stream's limits (7 days, on disk)
 * whatever the consumers do; `max_ack_pending` (2 000 on the NATS bus) only pauses delivery to a
 * durable with that many unacknowledged events, never the publisher, and `max_deliver` is unlimited
 * there, as here: a failing event is redelivered until the consumer acknowledges it (consumers park
 * or hand back on their own). Here the stream lives in memory, so a consumer that falls more than its
 * backlog behind (a sink whose webhook is down for hours while the feed keeps coming) has its oldest
 * queued events dropped, with an error log, as JetStream's limits expire events that a lagging
 * durable never read: the consumer sees a gap in the positions and handles it as it handles events
 * that expired from the stream (a SourceConsumer rebuilds its read models from the owner once a
 * position has been missing for 5 minutes, an event sink passes over the gap after 60 s, loudly).
 * Publishers and other consumers never wait for it. A durable whose instances all stopped keeps its
 * queue (bounded the same way), so a consumer started again under its name in this process resumes
 * with it; nothing survives the process (the outbox row was marked published once the bus took it).
 */
class DurableQueue {
  readonly queue: Queued[] = [];
  bytes = 0;
  readonly instances: ConsumerInstance[] = [];
  private turn = 0;
  inFlight?: Promise<void>;
  /** When the head may be delivered again (after a redelivery was asked for). */
  retryAt = 0;
  timer?: NodeJS.Timeout;
  /** Its last batch was handled without a failure within the publish wait: `publish` may wait for it. */
  keepingUp = true;
  /** Events dropped since it last caught up. */
  dropped = 0;

  constructor(
    readonly durable: string,
    public subject: string,
  ) {}

  nextInstance(): ConsumerInstance {
    return this.instances[this.turn++ % this.instances.length]!;
  }

  /** Ends every wait of `publish` on events still queued here. */
  settleQueued(): void {
    for (const q of this.queue) settle(q);
  }
}

function settle(q: Queued): void {
  const settled = q.settled;
  q.settled = undefined;
  settled?.();
}

export interface InProcessBusOptions {
  /**
   * Hold published events until `openEvents()`, so that when every service starts in one process no
   * event is published before all durable consumers are registered.
   */
  holdEvents?: boolean;
  /** Where failed handlers are logged (safely, like every log line). */
  logger?: Logger;
  /** How many recent events `follow` can resume in. */
  followWindow?: FollowWindow;
  /** How far a durable consumer may fall behind before its oldest events are dropped. */
  consumerBacklog?: ConsumerBacklog;
  /** The delay before an event handed back is delivered again, by its delivery attempt (default NATS's nak delay). */
  redeliveryDelayMs?: (attempt: number) => number;
  /** Longest `publish` waits for consumers that keep up to handle the event (default 5 s). */
  publishWaitMs?: number;
}

/**
 * The bus of `npm start`: every service in one process. Same semantics as the NATS bus where it
 * matters: queue groups share requests round-robin; an event is stored once (de-duplicated by its
 * id while the log holds it) and queued for every durable consumer, each with its own order and
 * redelivery (DurableQueue), so a consumer that fails or is slow holds back nothing but itself;
 * followers and tails see each event once, as it is stored. Payloads are passed through JSON so no
 * handler ever shares an object with its caller.
 *
 * `publish` resolves once the event is stored and queued. It also waits, for at most
 * `publishWaitMs`, for the consumers that keep up (nothing queued or in flight, and their last
 * batch neither failed nor took longer than that) to handle it: with every consumer healthy, an
 * event is applied everywhere when its publish resolves, as it was when publish delivered in turn,
 * and the outbox relay goes no faster than its consumers. A consumer that is behind, in its
 * redelivery back-off, or slow, is not waited for.
 */
export class InProcessBus implements Bus {
  private readonly subscriptions: Subscription[] = [];
  private readonly durables = new Map<string, DurableQueue>();
  private readonly tails = new Set<{ subjects: string[]; onEvent: (event: EventEnvelope) => void }>();
  private readonly log: EventLog;
  private readonly followers = new Set<InProcessFollower>();
  private readonly listeners = new Set<{ subject: string; onSignal: (payload: unknown) => void }>();
  private roundRobin = 0;
  private closed = false;
  private releaseEvents!: () => void;
  private readonly eventsOpen: Promise<void>;
  private readonly logger: Logger;
  private readonly backlogEvents: number;
  private readonly backlogBytes: number;
  private readonly redeliveryDelayMs: (attempt: number) => number;
  private readonly publishWaitMs: number;

  constructor(options: InProcessBusOptions = {}) {
    this.logger = options.logger ?? createLogger('bus');
    this.log = new EventLog(options.followWindow?.events ?? 10_000, options.followWindow?.bytes ?? 32 * 1024 * 1024);
    this.backlogEvents = options.consumerBacklog?.events ?? 10_000;
    this.backlogBytes = options.consumerBacklog?.bytes ?? 32 * 1024 * 1024;
    this.redeliveryDelayMs = options.redeliveryDelayMs ?? ((attempt) => Math.min(10_000, 500 * attempt));
    this.publishWaitMs = options.publishWaitMs ?? 5_000;
    this.eventsOpen = new Promise((resolve) => {
      this.releaseEvents = resolve;
    });
    if (!options.holdEvents) this.releaseEvents();
  }

  openEvents(): void {
    this.releaseEvents();
  }

  /** Signals reach the listeners of this process only, synchronously; none can be missed. */
  signal(subject: string, payload: unknown): void {
    if (this.closed) return;
    for (const l of [...this.listeners]) {
      if (!subjectMatches(l.subject, subject)) continue;
      try {
        l.onSignal(JSON.parse(JSON.stringify(payload ?? null)));
      } catch (err) {
        this.logger.error({ err, subject }, 'a signal listener failed');
      }
    }
  }

  listen(subject: string, onSignal: (payload: unknown) => void, _onGap: () => void): Tail {
    const listener = { subject, onSignal };
    this.listeners.add(listener);
    return {
      stop: async () => {
        this.listeners.delete(listener);
      },
    };
  }

  request(subject: string, payload: unknown, options: { timeoutMs?: number } = {}): Promise<unknown> {
    return observeBusRequest(subject, () => this.send(subject, payload, requestBudgetMs(options.timeoutMs)));
  }

  private async send(subject: string, payload: unknown, timeoutMs: number): Promise<unknown> {
    const candidates = this.subscriptions.filter((s) => s.active && subjectMatches(s.subject, subject));
    if (candidates.length === 0 || this.closed) throw new NoRespondersError(subject);
    const sub = candidates[this.roundRobin++ % candidates.length]!;
    const message = JSON.parse(JSON.stringify(payload ?? null));
    const work = toBusReply(() => sub.handler(message, subject), this.logger, subject, currentRequestMeta(), {
      at: Date.now() + timeoutMs,
      budgetMs: timeoutMs,
    });
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

  publish(subject: string, event: EventEnvelope): Promise<void> {
    return this.publishMany([{ subject, event }]);
  }

  /**
   * Stores and queues the events in order, then hands each durable what it got at once (up to its
   * batch size): a durable applies an outbox batch in one delivery, not one per event. Waits, as
   * `publish` does, for the durables that kept up before the first of them to handle them all.
   */
  async publishMany(messages: readonly { subject: string; event: EventEnvelope }[]): Promise<void> {
    await this.eventsOpen;
    const waits: Promise<void>[] = [];
    /** Per durable queued to: whether publishing waits for it (decided before its first event). */
    const queuedTo = new Map<DurableQueue, boolean>();
    for (const { subject, event } of messages) {
      const entry = this.log.append(subject, event);
      // Already stored (an outbox retry after a crash between publish and mark): JetStream drops a
      // message whose id it has, and so does this bus; nobody sees it twice.
      if (!entry) continue;
      for (const f of this.followers) this.deliver(f);
      for (const t of this.tails) if (t.subjects.some((pattern) => subjectMatches(pattern, subject))) t.onEvent(event);
      if (this.closed) continue;
      for (const d of this.durables.values()) {
        if (!subjectMatches(d.subject, subject)) continue;
        let waited = queuedTo.get(d);
        if (waited === undefined) queuedTo.set(d, (waited = this.keepsUp(d)));
        const queued: Queued = { entry, attempt: 0 };
        if (waited) waits.push(new Promise<void>((resolve) => (queued.settled = resolve)));
        this.enqueue(d, queued);
      }
    }
    for (const d of queuedTo.keys()) this.pump(d);
    if (waits.length > 0) await waitAtMost(Promise.all(waits), this.publishWaitMs);
  }

  /** Whether `publish` waits for this consumer: running, nothing queued or in flight, healthy. */
  private keepsUp(d: DurableQueue): boolean {
    return d.instances.length > 0 && d.keepingUp && !d.inFlight && d.queue.length === 0 && d.retryAt <= Date.now();
  }

  /** Queues an event for a durable, dropping its oldest events past its backlog (see DurableQueue). */
  private enqueue(d: DurableQueue, queued: Queued): void {
    d.queue.push(queued);
    d.bytes += queued.entry.json.length;
    let dropped = 0;
    let first: LoggedEvent | undefined;
    while (d.queue.length > this.backlogEvents || (d.bytes > this.backlogBytes && d.queue.length > 1)) {
      const oldest = d.queue.shift()!;
      d.bytes -= oldest.entry.json.length;
      settle(oldest);
      first ??= oldest.entry;
      dropped++;
    }
    if (dropped === 0) return;
    if (d.dropped === 0)
      this.logger.error(
        {
          consumer: d.durable,
          backlogEvents: this.backlogEvents,
          backlogBytes: this.backlogBytes,
          firstDroppedId: first!.id,
        },
        'event consumer fell too far behind; its oldest queued events are dropped (it will see a gap)',
      );
    d.dropped += dropped;
  }

  /** Hands the durable its next batch, unless one is in flight, it waits for a redelivery, or no instance runs. */
  private pump(d: DurableQueue): void {
    if (this.closed || d.inFlight || d.instances.length === 0 || d.queue.length === 0) return;
    const wait = d.retryAt - Date.now();
    if (wait > 0) {
      if (!d.timer) {
        d.timer = setTimeout(() => {
          d.timer = undefined;
          this.pump(d);
        }, wait);
        d.timer.unref();
      }
      return;
    }
    const batch = d.queue.splice(0, batchSize);
    for (const q of batch) d.bytes -= q.entry.json.length;
    d.inFlight = this.handle(d, d.nextInstance(), batch).finally(() => {
      d.inFlight = undefined;
      this.pump(d);
    });
  }

  private async handle(d: DurableQueue, instance: ConsumerInstance, batch: Queued[]): Promise<void> {
    const began = Date.now();
    const deliveries: EventDelivery[] = batch.map((q) => ({
      event: JSON.parse(q.entry.json) as EventEnvelope,
      attempt: ++q.attempt,
    }));
    let retry: Queued[] = [];
    let retryDelayMs: number | undefined;
    try {
      await instance.handler(deliveries);
    } catch (err) {
      if (err instanceof RetryEvents) {
        retry = batch.filter((q) => err.eventIds.has(q.entry.id));
        retryDelayMs = err.delayMs;
      } else {
        this.logger.warn({ err, consumer: d.durable }, 'event batch failed; redelivering');
        retry = batch;
      }
    }
    if (retry.length > 0) {
      // Back to the head, in order: they come again before anything published after them.
      d.queue.unshift(...retry);
      for (const q of retry) d.bytes += q.entry.json.length;
      d.retryAt = Date.now() + (retryDelayMs ?? this.redeliveryDelayMs(retry[0]!.attempt));
    } else d.retryAt = 0;
    d.keepingUp = retry.length === 0 && Date.now() - began <= this.publishWaitMs;
    for (const q of batch) settle(q);
    if (d.dropped > 0 && d.queue.length === 0) {
      this.logger.warn({ consumer: d.durable, dropped: d.dropped }, 'event consumer caught up after dropping events');
      d.dropped = 0;
    }
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

  /**
   * Follows from the in-memory log: resumes anywhere within its window (`followWindow`), and tells
   * `onLost` when asked for a position before it. Delivery runs in `publish`, synchronously, as
   * each event is stored (whatever the durable consumers do).
   */
  async follow(
    subjects: string[],
    options: FollowOptions,
    onEvent: (event: EventEnvelope, sequence: number) => void,
    onEnd: (end: FollowEnd) => void,
  ): Promise<Follower> {
    const f: InProcessFollower = {
      subjects,
      cursor: options.afterSequence ?? this.log.next - 1,
      started: false,
      stopped: false,
      paused: false,
      onEvent,
      onEnd,
      ...(options.onLost ? { onLost: options.onLost } : {}),
    };
    this.followers.add(f);
    // The held events are delivered once the caller has its follower, like the NATS bus's.
    setImmediate(() => this.deliver(f));
    return {
      stop: async () => this.endFollower(f, { reason: 'stopped' }),
      pause: () => {
        f.paused = true;
      },
      resume: () => {
        if (!f.paused) return;
        f.paused = false;
        // Off the caller's stack (a socket's drain): delivery calls back into the reader.
        setImmediate(() => this.deliver(f));
      },
      head: async () => this.log.next - 1,
    };
  }

  /** How many followers are running (for tests: a follower whose reader left must be gone). */
  get followerCount(): number {
    return this.followers.size;
  }

  private endFollower(f: InProcessFollower, end: FollowEnd): void {
    if (f.stopped) return;
    f.stopped = true;
    this.followers.delete(f);
    f.onEnd(end);
  }

  /** Hands a follower every held event after its cursor, in order. */
  private deliver(f: InProcessFollower): void {
    if (f.stopped) return;
    if (!f.started) {
      f.started = true;
      const oldest = this.log.oldest;
      // A position before the window, or one this log never gave (a reader from an earlier run).
      if (f.cursor + 1 < oldest || f.cursor >= this.log.next) {
        const afterSequence = f.cursor;
        f.cursor = oldest - 1;
        f.onLost?.({ afterSequence, resumesAt: oldest });
      }
    }
    if (f.cursor + 1 < this.log.oldest) {
      // Cannot happen while delivery keeps up (it runs in publish); kept as a guard.
      const afterSequence = f.cursor;
      f.cursor = this.log.oldest - 1;
      f.onLost?.({ afterSequence, resumesAt: this.log.oldest });
    }
    while (!f.stopped && !f.paused && f.cursor + 1 < this.log.next) {
      const entry = this.log.at(f.cursor + 1)!;
      f.cursor = entry.sequence;
      if (!f.subjects.some((pattern) => subjectMatches(pattern, entry.subject))) continue;
      try {
        f.onEvent(JSON.parse(entry.json) as EventEnvelope, entry.sequence);
      } catch (err) {
        this.endFollower(f, { reason: 'failed', error: err instanceof Error ? err : new Error(String(err)) });
      }
    }
  }

  /**
   * Registers an instance of a durable consumer (see DurableQueue): instances under one name share
   * its queue. Stopping waits for a batch in flight; the queue stays with the durable.
   */
  async consume(options: EventConsumerOptions): Promise<Consumer> {
    let d = this.durables.get(options.durable);
    if (!d) {
      d = new DurableQueue(options.durable, options.subject);
      this.durables.set(options.durable, d);
    } else d.subject = options.subject;
    const durable = d;
    const instance: ConsumerInstance = { handler: options.handler };
    durable.instances.push(instance);
    this.pump(durable);
    return {
      // Every consumer of `npm start` is registered before events are published (`holdEvents`),
      // and a consumer started again in this process resumes with its queue: there is no stream
      // older than the process to replay from.
      fresh: false,
      pending: async () => durable.queue.length,
      stop: async () => {
        const index = durable.instances.indexOf(instance);
        if (index < 0) return;
        durable.instances.splice(index, 1);
        await durable.inFlight;
        if (durable.instances.length === 0) {
          clearTimeout(durable.timer);
          durable.timer = undefined;
          durable.settleQueued();
        }
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const f of [...this.followers]) this.endFollower(f, { reason: 'failed', error: new Error('the bus closed') });
    for (const d of this.durables.values()) {
      clearTimeout(d.timer);
      d.timer = undefined;
      d.settleQueued();
    }
    // Consumers are stopped by their owners first (a stop waits for the batch in hand); a handler
    // still running now finishes on its own, and nothing is delivered after it.
    await Promise.allSettled(this.subscriptions.map((s) => Promise.allSettled([...s.inFlight])));
  }
}

/** Resolves when `p` does, or after `ms`, whichever comes first. */
async function waitAtMost(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
