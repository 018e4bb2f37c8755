import type { RequestMeta, SerializedApiError } from '@ziti/contracts';

/** A versioned domain event as it travels on the stream (DESIGN §3). */
export interface EventEnvelope<T = unknown> {
  /** Globally unique and stable across re-publishing: `<source>:<outbox id>`; the JetStream message id. */
  id: string;
  /** e.g. `identity.created`. */
  type: string;
  /** Schema version of `data`. */
  version: number;
  /** The owning service. */
  source: string;
  /** Monotonic per source (the outbox row id): read models apply an entity's events in this order. */
  sequence: number;
  occurredAt: string;
  data: T;
  /** The request whose writes emitted it: actor, API session, address, request id, operation (absent for background work). */
  meta?: RequestMeta;
}

export interface RequestOptions {
  timeoutMs?: number;
  /**
   * For a request that is safe to repeat (a read, or a write whose idempotency is guaranteed; the
   * gateway sends only its GETs so): when no reply came within `afterMs`, the same request is sent
   * again, and again after each further `afterMs`, up to `attempts` sends in all, within `timeoutMs`.
   * The queue group picks the replica of the first send; a repeat goes to every replica of the
   * owner (NATS: `repeatSubject`), so it reaches a live one even when the replica holding the first
   * send is frozen or hung with its connection up. The earlier sends may still answer, and the first
   * reply wins, so a slow replica costs nothing but a repeated read. The in-process bus has no
   * replicas and ignores it.
   *
   * `settles` (a write sent with an idempotency key, whose repeats each run until one holds the
   * key): whether a reply ends the request. One that does not (the key is held by another send of
   * the same write, still running) is kept and given only once no other send can answer.
   */
  retry?: { afterMs: number; attempts: number; settles?: (reply: BusReply) => boolean };
}

/** A request handler: resolves with the reply payload or throws (an `ApiError` keeps its code). */
export type RequestHandler = (payload: unknown, subject: string) => Promise<unknown>;

export interface Served {
  /** Stop taking new requests and wait for the ones in flight. */
  drain(): Promise<void>;
}

/** One delivery of an event to a durable consumer. */
export interface EventDelivery {
  event: EventEnvelope;
  /** 1 on the first delivery, then 2, 3, … on redeliveries. */
  attempt: number;
}

/** The longest a handler may ask the bus to hold an event back (`RetryEvents.delayMs`). */
export const maxRetryDelayMs = 60_000;

/**
 * Thrown by a consumer's handler to have only these events (by `id`) redelivered later; the rest
 * are acked. Without `delayMs` they come again after the bus's redelivery delay, which grows with
 * each event's attempts; with it, after that many milliseconds (at most `maxRetryDelayMs`), all of
 * them at once: a handler that takes events only in order and knows when it can take them again
 * (a sink waiting out its back-off) has them back together, in order, rather than each on its
 * own schedule.
 */
export class RetryEvents extends Error {
  readonly delayMs?: number;

  constructor(
    readonly eventIds: ReadonlySet<string>,
    options: { delayMs?: number } = {},
  ) {
    super(`${eventIds.size} event(s) to retry`);
    this.name = 'RetryEvents';
    if (options.delayMs !== undefined && Number.isFinite(options.delayMs))
      this.delayMs = Math.round(Math.min(maxRetryDelayMs, Math.max(0, options.delayMs)));
  }
}

export interface EventConsumerOptions {
  /** Durable name shared by every replica of the consuming service. */
  durable: string;
  /** Subject filter, e.g. `ziti.evt.auth.>`. */
  subject: string;
  /**
   * Handles a batch of deliveries (in stream order); resolving acks all of them, `RetryEvents`
   * redelivers the named ones later, any other failure redelivers the batch.
   */
  handler: (batch: EventDelivery[]) => Promise<void>;
}

export interface Consumer {
  /**
   * The durable did not exist (or had to be recreated) at this start: it delivers the stream from
   * its start, which may no longer hold everything, so read models resync from their owners.
   */
  readonly fresh: boolean;
  /** Events on the stream not yet delivered to the durable (its lag; for metrics). */
  pending?(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The one messaging port of every service: request/reply between processes and durable,
 * at-least-once events. NATS (JetStream) in the cluster, in-process under `npm start`.
 */
export interface Bus {
  request(subject: string, payload: unknown, options?: RequestOptions): Promise<unknown>;
  serve(subject: string, queue: string, handler: RequestHandler): Served;
  /** Resolves once the event is durably accepted (de-duplicated by `event.id`). */
  publish(subject: string, event: EventEnvelope): Promise<void>;
  /**
   * Publishes events in their order, as `publish` one after the other would, and resolves once
   * every one is accepted. A bus that has it hands what it accepts together to each consumer as
   * one delivery where it can (the outbox relay publishes its batches through it); without it, the
   * relay publishes one by one.
   */
  publishMany?(messages: readonly { subject: string; event: EventEnvelope }[]): Promise<void>;
  consume(options: EventConsumerOptions): Promise<Consumer>;
  /**
   * Follows the events on `subjects` from now on, for this process alone (no durable, no
   * acknowledgements, nothing kept): for in-memory views such as the gateway's answer cache
   * (docs/adr/0015). Events arrive in stream order; `onReset` is called when the follower had to
   * start again and may have missed some (the view must then forget what it derived).
   */
  tail?(subjects: string[], onEvent: (event: EventEnvelope) => void, onReset: () => void): Promise<Tail>;
  /**
   * Follows the events on `subjects` from a position of the event stream, each delivered with its
   * own position (its stream sequence), for this process alone: nothing durable is created, and
   * nothing is left behind once stopped. With `afterSequence`, delivery starts with the first
   * matching event after that position, so a reader that kept the position of the last event it
   * got resumes with nothing lost and nothing doubled; without it, with the next event published.
   * Events arrive in stream order, one call at a time; `onEvent` must not block (queue and return).
   * When the events after `afterSequence` are no longer all held, `onLost` is told and delivery
   * goes on from the oldest event held. `onEnd` is called once, when the follower ends: stopped, or
   * failed (the stream is gone, the bus closed).
   */
  follow?(
    subjects: string[],
    options: FollowOptions,
    onEvent: (event: EventEnvelope, sequence: number) => void,
    onEnd: (end: FollowEnd) => void,
  ): Promise<Follower>;
  /**
   * Broadcasts `payload` to every process listening on `subject` at this moment (core NATS
   * publish; nothing is kept, so delivery is at most once). For facts that write no event and that
   * every replica of a consumer needs soon (auth's API sessions for routers, docs/adr/0023).
   */
  signal?(subject: string, payload: unknown): void;
  /**
   * Listens for the signals on `subject`, in this process. `onGap` is told when some may have been
   * missed (the connection to NATS was lost and is back): what was derived from them must be
   * rebuilt from their owner.
   */
  listen?(subject: string, onSignal: (payload: unknown) => void, onGap: () => void): Tail;
  close(): Promise<void>;
}

export interface FollowOptions {
  /** Deliver the events after this stream position; absent: the events published from now on. */
  afterSequence?: number;
  /**
   * Some events after `afterSequence` are no longer held (retention, or a position from before a
   * restart of an in-process log): delivery resumes at `resumesAt`, the oldest position held.
   */
  onLost?: (gap: { afterSequence: number; resumesAt: number }) => void;
}

/** Why a follower ended. */
export type FollowEnd = { reason: 'stopped' } | { reason: 'failed'; error: Error };

export interface Follower {
  /** Stops delivery (no `onEvent` after it resolves) and removes what the follower used on the server. */
  stop(): Promise<void>;
  /**
   * Holds delivery back (the reader's socket is full): what comes next waits in the stream, not in
   * memory, and `resume` goes on from the event after the last one delivered, with no gap and no
   * repeat. A few events already on their way may still arrive after `pause`.
   */
  pause(): void;
  resume(): void;
  /** The stream's newest position now: the events up to it are the backlog a resuming reader replays. */
  head(): Promise<number>;
}

export interface Tail {
  stop(): Promise<void>;
}

/**
 * The wire form of a reply on the bus. `positions` are the event positions the handler's writes
 * produced (docs/adr/0008), so a caller can wait for them elsewhere.
 */
export type BusReply =
  | { ok: true; result: unknown; positions?: Record<string, number> }
  | { ok: false; error: SerializedApiError; positions?: Record<string, number> };

/** Raised when nobody serves a subject (the owning service is down or not deployed). */
export class NoRespondersError extends Error {
  constructor(subject: string) {
    super(`no responders for ${subject}`);
    this.name = 'NoRespondersError';
  }
}

export class RequestTimeoutError extends Error {
  constructor(subject: string) {
    super(`request to ${subject} timed out`);
    this.name = 'RequestTimeoutError';
  }
}

/** NATS-style subject matching: `*` one token, `>` the rest. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
