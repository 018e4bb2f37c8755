import { type EventDelivery, type EventEnvelope, RetryEvents } from '@ziti/platform/bus/bus';
import { sleep } from '@ziti/platform/sleep';
import { type BackoffBounds, type Framed, backoffDelay } from './sinks.domain.ts';
import type { SinkCheckpoint, SinkItem, SinkObserver, SinkOutput } from './sinks.ports.ts';

export interface OrderedSinkOptions {
  output: SinkOutput;
  checkpoint: SinkCheckpoint;
  observer: SinkObserver;
  /** What the sink makes of one event (frameEvent with the sink's options). */
  frame(event: EventEnvelope): Framed;
  backoff: BackoffBounds;
  /** Longest a batch waits in hand for its next attempt; a longer wait hands it back (default 5 s). */
  maxWaitInBatchMs?: number;
  /** Longest one batch is worked on before the rest is handed back (default 20 s: the NATS bus holds a batch for 35 s). */
  batchBudgetMs?: number;
  /** How long a missing position is waited for before it is passed over (default 60 s). */
  gapTimeoutMs?: number;
  /**
   * Whether this replica still holds the sink's lease (SinkCheckpoint.lease), when it runs under
   * one: asked before each delivery, and events are then delivered one at a time.
   */
  leased?: () => Promise<boolean>;
  random?: () => number;
  now?: () => number;
}

/** The soonest events handed back come again (an event above a missing one, a batch out of time). */
const handBackMinMs = 250;

/**
 * Delivers audit's events to one output strictly in position order, each once as far as the sink
 * can know, whatever the bus redelivers and in whatever order (docs/extensions.md, "Event sinks").
 *
 * Audit numbers its events 1, 2, 3, … without holes (docs/adr/0008) and the sink follows all of
 * them, so "everything before this event was delivered" is exact: the sink's position (the last
 * event it delivered or passed over, kept durable in its checkpoint) is one below it. An event
 * above the next one is handed back to the bus (redelivered later) until the next one came by; an
 * event at or below the position is a redelivery and is acknowledged without a second delivery.
 * A failure stops the batch at the failing event: the events before it are acknowledged, it and
 * everything after it are handed back, and the next attempt waits for an exponential, jittered,
 * capped back-off kept here across redeliveries; what is handed back is asked to come again
 * together when that back-off ends. The bus acknowledges only what is at or below the saved
 * checkpoint.
 *
 * A position that never comes (it expired from the stream, or the checkpoint was lost with the
 * durable's progress) is passed over after `gapTimeoutMs`, with an error log, from the lowest
 * event waiting: longer than any redelivery delay of the bus (a nak waits ≤ 10 s, an unacked batch
 * of a dead replica ≤ 4 s, of a hung one ≤ 39 s).
 *
 * Several replicas can run one sink when its checkpoint is shared (a row in audit's database) and
 * leased: one replica at a time holds the lease and consumes (sinks.transport.ts), the others stand
 * by. The sink reads the position again before each batch (a replica that held the lease before may
 * have delivered further), and delivers one event at a time, each only while the lease is still
 * held: a replica that lost it (its database connection broke, and another replica took over)
 * stops before its next event.
 */
export class OrderedSink {
  /** The last position delivered or passed over (in memory; `saved` is on disk). */
  private cursor?: number;
  private saved?: number;
  private failures = 0;
  private failingSince = 0;
  private nextAttemptAt = 0;
  private gap?: { expected: number; since: number; lowest: number; lowestAt: number };
  private readonly abort = new AbortController();
  private queue: Promise<unknown> = Promise.resolve();
  private started = false;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly maxWaitInBatchMs: number;
  private readonly batchBudgetMs: number;
  private readonly gapTimeoutMs: number;

  constructor(private readonly options: OrderedSinkOptions) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.maxWaitInBatchMs = options.maxWaitInBatchMs ?? 5_000;
    this.batchBudgetMs = options.batchBudgetMs ?? 20_000;
    this.gapTimeoutMs = options.gapTimeoutMs ?? 60_000;
  }

  /** Reads the checkpoint; events are refused (redelivered later) until it is read. */
  async start(): Promise<void> {
    const position = await this.options.checkpoint.load();
    this.cursor = this.saved = position;
    this.started = true;
    this.options.observer.started(position);
  }

  /** The position delivered (or passed over) so far and saved. */
  get position(): number | undefined {
    return this.saved;
  }

  /** Whether the last delivery attempt failed. */
  get failing(): boolean {
    return this.failures > 0;
  }

  /** The consumer's handler: batches are handled one at a time, in the order they are given. */
  readonly handle = (batch: EventDelivery[]): Promise<void> => {
    const run = this.queue.then(() => this.handleNow(batch.map((d) => d.event)));
    this.queue = run.catch(() => undefined);
    return run;
  };

  /** Aborts a delivery or a wait in progress (its events are handed back) and refuses what comes after. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.queue;
  }

  private async handleNow(events: EventEnvelope[]): Promise<void> {
    const { signal } = this.abort;
    if (!this.started || signal.aborted) throw new RetryEvents(new Set(events.map((e) => e.id)));
    const began = this.now();
    if (this.options.checkpoint.shared) {
      const position = await this.options.checkpoint.load();
      if (position !== undefined && (this.cursor === undefined || position > this.cursor))
        this.cursor = this.saved = position;
    }

    // The events that follow the position without a hole, in order; each delivered or passed over.
    const steps: { position: number; item?: SinkItem }[] = [];
    if (this.cursor === undefined && events.length > 0) {
      // No checkpoint: the sink starts with the first event it is given (a new durable delivers the
      // stream from its start).
      this.cursor = Math.min(...events.map((e) => e.sequence)) - 1;
    }
    let next = this.cursor!;
    for (const event of [...events].sort((a, b) => a.sequence - b.sequence)) {
      const position = event.sequence;
      if (position <= next) continue; // delivered before (a redelivery, or twice in this batch)
      if (position !== next + 1) {
        if (!this.passGap(next + 1, position)) break;
      } else if (this.gap?.expected === position) this.gap = undefined;
      const framed = this.options.frame(event);
      if (framed.kind === 'undecodable')
        this.options.observer.skipped('undecodable', position, position, framed.problem);
      steps.push(framed.kind === 'deliver' ? { position, item: framed.item } : { position });
      next = position;
    }

    const items = steps.flatMap((s) => (s.item ? [s.item] : []));
    let done = 0;
    while (done < items.length && !signal.aborted) {
      const wait = this.nextAttemptAt - this.now();
      if (wait > 0) {
        if (wait > this.maxWaitInBatchMs || this.now() + wait - began > this.batchBudgetMs) break;
        await sleep(wait, signal);
        if (signal.aborted) break;
      }
      if (this.now() - began > this.batchBudgetMs) break;
      // Leased: one event at a time, each only while the lease is still held (a replica whose
      // database connection broke lost it, and another may deliver from here on).
      const { leased } = this.options;
      if (leased && !(await leased().catch(() => false))) break;
      const outcome = await this.options.output.deliver(
        leased ? items.slice(done, done + 1) : items.slice(done),
        signal,
      );
      if (outcome.delivered > 0) {
        done += outcome.delivered;
        this.options.observer.delivered(outcome.delivered, items[done - 1]!.position);
        if (this.failures > 0) {
          this.options.observer.recovered(this.failures, this.now() - this.failingSince);
          this.failures = 0;
          this.nextAttemptAt = 0;
        }
      }
      if (signal.aborted) break;
      if (outcome.failure) {
        if (this.failures === 0) this.failingSince = this.now();
        this.failures++;
        const delay = backoffDelay(this.failures, this.options.backoff, this.random, outcome.failure.retryAfterMs);
        this.nextAttemptAt = this.now() + delay;
        this.options.observer.failed(outcome.failure, this.failures, delay);
      } else if (outcome.delivered === 0) break; // an output that neither delivers nor fails: hand back
    }

    const committed = done < items.length ? items[done]!.position - 1 : steps.at(-1)?.position;
    if (committed !== undefined && committed > this.cursor!) this.cursor = committed;
    if (this.cursor !== this.saved) {
      try {
        await this.options.checkpoint.save(this.cursor!);
        this.saved = this.cursor;
      } catch (err) {
        this.options.observer.checkpointFailed(err);
      }
    }
    // Acknowledged: what the saved checkpoint covers. The rest comes again, and what is at or below
    // the position by then is passed as a redelivery.
    const saved = this.saved;
    const retry = events.filter((e) => saved === undefined || e.sequence > saved).map((e) => e.id);
    if (retry.length > 0) throw new RetryEvents(new Set(retry), { delayMs: this.handBackDelayMs() });
  }

  /**
   * When what is handed back should come again: at the next attempt when the sink is backing off,
   * all together (each on the bus's own schedule, which grows with its attempts, an outage's
   * events would come back in an order the sink refuses, and each would wait out its
   * predecessor's redelivery: one delay per event); soon otherwise (a missing predecessor is
   * usually one redelivery away).
   */
  private handBackDelayMs(): number {
    const untilNextAttempt = Math.min(this.options.backoff.maxMs, this.nextAttemptAt - this.now());
    return Math.max(handBackMinMs, untilNextAttempt);
  }

  /**
   * An event above the next position: refused, unless the next position has been missing for
   * `gapTimeoutMs` and this is the lowest event seen since (or the lowest stopped coming round).
   */
  private passGap(expected: number, position: number): boolean {
    const now = this.now();
    const gap = this.gap;
    if (!gap || gap.expected !== expected) {
      this.gap = { expected, since: now, lowest: position, lowestAt: now };
      return false;
    }
    if (position <= gap.lowest || now - gap.lowestAt > this.gapTimeoutMs) {
      gap.lowest = position;
      gap.lowestAt = now;
    }
    if (now - gap.since < this.gapTimeoutMs || position !== gap.lowest) return false;
    this.options.observer.skipped('gap', expected, position - 1);
    this.gap = undefined;
    return true;
  }
}

/**
 * A shared checkpoint that, while it has no position yet, starts from one kept elsewhere: the file
 * in which a version before the shared checkpoints kept the webhook's position, so that an upgrade
 * goes on where the sink stopped. Saves go to the shared one only.
 */
export class SeededCheckpoint implements SinkCheckpoint {
  readonly shared: boolean;
  readonly lease?: SinkCheckpoint['lease'];
  readonly close?: SinkCheckpoint['close'];

  constructor(
    private readonly kept: SinkCheckpoint,
    private readonly seed: SinkCheckpoint,
  ) {
    this.shared = kept.shared ?? false;
    if (kept.lease) this.lease = (waitMs, signal) => kept.lease!(waitMs, signal);
    if (kept.close) this.close = () => kept.close!();
  }

  async load(): Promise<number | undefined> {
    return (await this.kept.load()) ?? (await this.seed.load());
  }

  save(position: number): Promise<void> {
    return this.kept.save(position);
  }
}
