import {
  type AuthenticationAttemptState,
  type ReportedAuthenticationAttempt,
  type RequestMeta,
  authenticationEventTypes,
  maxAttemptsPerEvent,
} from '@ziti/contracts';
import {
  type Database,
  type Logger,
  type OutboxRelay,
  type PendingEvent,
  authenticationAttemptMetrics,
  currentRequestMeta,
  outsideRequest,
  unavailableDependency,
  writeOutbox,
} from '@ziti/platform';
import { attemptState } from './authentication-attempts.domain.ts';
import type { AuthenticationAttempt, AuthenticationAttempts } from './authentication-attempts.ports.ts';

/** A reported attempt waiting to be written, with the request it was reported in. */
export interface QueuedAttempt {
  state: AuthenticationAttemptState;
  /** The login's request (id, operation, remote address), captured when it was reported. */
  meta?: RequestMeta;
}

/** Writes one batch of attempts (all of it, or nothing). */
export type AttemptBatchWriter = (batch: QueuedAttempt[]) => Promise<void>;

export interface AttemptQueueOptions {
  /** Longest an attempt waits in memory before its batch is written (default 100 ms). */
  intervalMs?: number;
  /** Attempts per transaction (and event) at most; a full batch is written at once (default and most: 500). */
  batchSize?: number;
  /** Attempts held in memory at most, the batch being written included; beyond, they are dropped and counted (default 20,000). */
  capacity?: number;
  /** Wait before writing again after a failed write, the database being unreachable (default 1 s). */
  retryMs?: number;
}

/** How often a run of drops is logged at most. */
const dropLogMs = 10_000;

/**
 * `AuthenticationAttempts` off the login's path (docs/adr/0021): `report` captures the request's
 * meta and queues the attempt in memory; batches are written to auth's outbox, one transaction
 * each, every `intervalMs` or as soon as `batchSize` are waiting, one batch at a time so the
 * outbox holds them in the order they were reported (each batch one `authentication.attempted`
 * event, `outboxAttemptWriter`). The queue is bounded: when it is full a
 * report is dropped, counted (`ziti_auth_attempts_dropped_total`) and logged, never waited for.
 * A write that fails because the database is unreachable keeps its batch and is tried again; one
 * that fails otherwise is retried attempt by attempt, and only an attempt that fails alone is
 * dropped. `stop` writes everything still queued.
 */
export class BatchedAuthenticationAttempts implements AuthenticationAttempts {
  private queue: QueuedAttempt[] = [];
  private timer?: NodeJS.Timeout;
  /** When the pending timer fires (to bring it forward when a batch fills). */
  private timerAt = 0;
  private writing?: Promise<void>;
  private stopped = false;
  /** The last write failed with the database unreachable: the next waits `retryMs`. */
  private unavailable = false;
  private droppedSinceLog = 0;
  private lastDropLog = 0;
  private readonly intervalMs: number;
  private readonly batchSize: number;
  private readonly capacity: number;
  private readonly retryMs: number;

  constructor(
    private readonly write: AttemptBatchWriter,
    private readonly logger: Pick<Logger, 'warn' | 'error'>,
    options: AttemptQueueOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 100;
    this.batchSize = Math.min(maxAttemptsPerEvent, Math.max(1, options.batchSize ?? maxAttemptsPerEvent));
    this.capacity = Math.max(this.batchSize, options.capacity ?? 20_000);
    this.retryMs = options.retryMs ?? 1_000;
  }

  /** Attempts reported and not yet written. */
  get pending(): number {
    return this.queue.length;
  }

  report(attempt: AuthenticationAttempt): void {
    if (this.stopped || this.queue.length >= this.capacity) {
      this.drop(1, this.stopped ? 'stopped' : 'full');
      return;
    }
    const meta = currentRequestMeta();
    this.queue.push(meta ? { state: attemptState(attempt), meta } : { state: attemptState(attempt) });
    authenticationAttemptMetrics.queued(this.queue.length);
    this.schedule();
  }

  /** Writes everything queued (waiting for the write under way) and takes no more reports. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    await this.writing;
    while (this.queue.length > 0) {
      const before = this.queue.length;
      await this.writeNext();
      if (this.queue.length >= before) break; // the database is gone: what is left is lost
    }
    if (this.queue.length > 0) {
      this.logger.error({ lost: this.queue.length }, 'authentication attempts not written at stop');
      authenticationAttemptMetrics.dropped(this.queue.length);
      this.queue = [];
      authenticationAttemptMetrics.queued(0);
    }
  }

  /** A write when a batch is full, else after `intervalMs` (after `retryMs` while the database is unreachable). */
  private schedule(): void {
    if (this.stopped || this.writing || this.queue.length === 0) return;
    const delay = this.unavailable ? this.retryMs : this.queue.length >= this.batchSize ? 0 : this.intervalMs;
    const at = Date.now() + delay;
    if (this.timer && this.timerAt <= at) return;
    this.clearTimer();
    this.timerAt = at;
    // Not the reporting request's: the write is background work, with no request of its own.
    this.timer = outsideRequest(() => setTimeout(() => this.run(), delay));
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private run(): void {
    this.timer = undefined;
    if (this.stopped || this.writing || this.queue.length === 0) return;
    this.writing = this.writeNext().finally(() => {
      this.writing = undefined;
      this.schedule();
    });
  }

  /** Writes the oldest batch; never throws. */
  private async writeNext(): Promise<void> {
    const batch = this.queue.slice(0, this.batchSize);
    let done = batch.length;
    try {
      await this.write(batch);
      this.unavailable = false;
      authenticationAttemptMetrics.written(batch.length);
    } catch (err) {
      if (unavailableDependency(err)) {
        if (!this.unavailable)
          this.logger.warn({ err, queued: this.queue.length }, 'authentication attempts wait for the database');
        this.unavailable = true;
        return;
      }
      this.logger.warn(
        { err, attempts: batch.length },
        'a batch of authentication attempts failed; writing them one by one',
      );
      done = await this.writeOneByOne(batch);
    }
    // Reports only append: the batch is still the head of the queue.
    this.queue.splice(0, done);
    authenticationAttemptMetrics.queued(this.queue.length);
  }

  /**
   * After a batch failed for a reason other than the database: each attempt alone, and one that
   * fails alone is dropped. Answers how many of the batch are done with (written or dropped): all
   * of them, unless the database became unreachable on the way.
   */
  private async writeOneByOne(batch: QueuedAttempt[]): Promise<number> {
    for (const [i, attempt] of batch.entries()) {
      try {
        await this.write([attempt]);
        authenticationAttemptMetrics.written(1);
      } catch (err) {
        if (unavailableDependency(err)) {
          this.unavailable = true;
          return i;
        }
        this.logger.error(
          { err, method: attempt.state.method, outcome: attempt.state.outcome, requestId: attempt.meta?.requestId },
          'an authentication attempt could not be written; dropped',
        );
        authenticationAttemptMetrics.dropped(1);
      }
    }
    return batch.length;
  }

  private drop(count: number, why: 'full' | 'stopped'): void {
    authenticationAttemptMetrics.dropped(count);
    this.droppedSinceLog += count;
    const now = Date.now();
    if (now - this.lastDropLog < dropLogMs) return;
    this.logger.warn(
      { dropped: this.droppedSinceLog, capacity: this.capacity, why },
      why === 'full'
        ? 'authentication attempts dropped: the queue is full (the database does not keep up)'
        : 'authentication attempts dropped: auth is stopping',
    );
    this.lastDropLog = now;
    this.droppedSinceLog = 0;
  }
}

/** The most an event of attempts weighs (JSON), far below NATS's default 1 MB max_payload. */
const maxEventBytes = 256 * 1024;

/**
 * The events of a batch: one `authentication.attempted` carrying every attempt with its request's
 * meta, in order. Split only if it would carry more than `maxAttemptsPerEvent` attempts or weigh
 * more than `maxEventBytes` (never with auth's batches of ordinary attempts: 500 weigh ~180 KB).
 */
export function attemptEvents(batch: QueuedAttempt[]): PendingEvent[] {
  const def = authenticationEventTypes.authenticationAttempted;
  const events: PendingEvent[] = [];
  let attempts: ReportedAuthenticationAttempt[] = [];
  let bytes = 0;
  for (const a of batch) {
    const attempt: ReportedAuthenticationAttempt = a.meta ? { ...a.state, meta: a.meta } : { ...a.state };
    const size = Buffer.byteLength(JSON.stringify(attempt)) + 1;
    if (attempts.length > 0 && (attempts.length >= maxAttemptsPerEvent || bytes + size > maxEventBytes)) {
      events.push({ type: def.type, version: def.version, data: { attempts } });
      attempts = [];
      bytes = 0;
    }
    attempts.push(attempt);
    bytes += size;
  }
  if (attempts.length > 0) events.push({ type: def.type, version: def.version, data: { attempts } });
  return events;
}

/**
 * Writes a batch of attempts to auth's outbox in one transaction, as one event (`attemptEvents`).
 * The event has no meta of its own: writing it is background work, on behalf of no one request.
 */
export function outboxAttemptWriter(database: Database, relay: OutboxRelay | undefined): AttemptBatchWriter {
  return async (batch) => {
    const events = attemptEvents(batch);
    await database.transaction((tx) => writeOutbox(tx, 'auth', events));
    relay?.kick();
  };
}
