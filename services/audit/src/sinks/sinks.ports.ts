/**
 * The ports of the event sinks (docs/extensions.md, "Event sinks"): where framed events go (a file,
 * a webhook), where a sink keeps the position it delivered up to, and who watches it (metrics, logs).
 */

/** One event as a sink hands it over: its feed id (`audit:<position>`), its position and its JSON text. */
export interface SinkItem {
  readonly id: string;
  readonly position: number;
  /** The payload as one line of JSON (no newline): the file's line, the webhook's body. */
  readonly body: string;
}

/** Why a delivery did not go through (bounded values: metric labels). */
export type SinkFailureReason =
  'network' | 'timeout' | 'http_3xx' | 'http_408' | 'http_429' | 'http_4xx' | 'http_5xx' | 'io';

export interface SinkFailure {
  reason: SinkFailureReason;
  /** The HTTP status, for an answer that was not a success. */
  status?: number;
  /** What the receiver asked for (`Retry-After`), in milliseconds. */
  retryAfterMs?: number;
  /** A short, secret-free description (an error code, a status line). */
  message: string;
}

export interface DeliveryOutcome {
  /** How many of the items were delivered: always a prefix, in order. */
  delivered: number;
  /** Why the next one was not (absent when all were). */
  failure?: SinkFailure;
}

/** Where a sink's events go. */
export interface SinkOutput {
  /**
   * Delivers `items` in order and stops at the first that fails; never throws for a failed
   * delivery (it is the outcome). An item counts as delivered only once it is durable at the
   * other end: synced to disk, or answered 2xx.
   */
  deliver(items: readonly SinkItem[], signal: AbortSignal): Promise<DeliveryOutcome>;
}

/** The position up to which a sink has delivered (or deliberately passed over) the feed. */
export interface SinkCheckpoint {
  /**
   * Kept where every replica of the audit service reads it (a database row), rather than by this
   * process alone: the sink then reads it again before each batch, since another replica may
   * have delivered further.
   */
  readonly shared?: boolean;
  /** Undefined before the first delivery. */
  load(): Promise<number | undefined>;
  /** Durable when it resolves; a shared checkpoint never moves back (the greater position wins). */
  save(position: number): Promise<void>;
  /**
   * A shared checkpoint's lease: the right to run the sink, held by one replica at a time. The
   * replica that has it consumes the sink's durable and delivers; the others stand by and ask for
   * it again. Two replicas pulling from one durable would each hold part of the feed (and, past an
   * ack deadline, copies of the same events), and could deliver it in order only by handing events
   * back and forth. Waits up to `waitMs`; undefined when it did not come. Absent where only one
   * process can use the checkpoint.
   */
  lease?(waitMs: number, signal: AbortSignal): Promise<SinkLease | undefined>;
  /** Frees what it holds (a connection) once the sink stopped. */
  close?(): Promise<void>;
}

/** The right to run a sink (SinkCheckpoint.lease). */
export interface SinkLease {
  /** Whether it is still held; asked before each delivery, so a replica that lost it stops. */
  held(): Promise<boolean>;
  release(): Promise<void>;
}

/** What a sink reports as it goes (metrics and log lines; never a secret). */
export interface SinkObserver {
  /** The sink starts delivering after `position` (undefined: from the first event it is given). */
  started(position: number | undefined): void;
  delivered(count: number, position: number): void;
  /** A delivery failed (`failures` in a row); the next attempt is in `retryInMs`. */
  failed(failure: SinkFailure, failures: number, retryInMs: number): void;
  /** Deliveries go through again after `failures` failures over `forMs`. */
  recovered(failures: number, forMs: number): void;
  /** Events passed over: undecodable ones, or positions that never arrived (`from`..`to`). */
  skipped(reason: 'undecodable' | 'gap', from: number, to: number, detail?: string): void;
  /** The checkpoint could not be saved: the batch is handed back and the save retried. */
  checkpointFailed(err: unknown): void;
}
