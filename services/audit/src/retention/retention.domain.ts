import type { RetentionStore } from './retention.ports.ts';

export interface RetentionOptions {
  /** Records older than this many days are deleted. */
  retentionDays: number;
  /** How often to sweep (default hourly). */
  intervalMs?: number;
  /** Records deleted per statement (default 5,000): short statements, short row locks. */
  batchSize?: number;
  /** Seconds a tombstone of an entity state is kept once no older event can need it (default an hour). */
  tombstoneSeconds?: number;
  now?: () => Date;
  onError?: (err: unknown) => void;
  onSwept?: (result: { records: number; tombstones: number }) => void;
}

const dayMs = 24 * 60 * 60 * 1000;

/** The instant before which records are past their retention. */
export function retentionCutoff(now: Date, retentionDays: number): Date {
  return new Date(now.getTime() - retentionDays * dayMs);
}

/**
 * Deletes audit records past their retention, oldest first in short batches, and entity-state
 * tombstones that no longer matter. Any number of replicas may sweep at once: each batch skips the rows
 * another one is deleting, and deleting what is gone already does nothing.
 */
export class RetentionSweeper {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly store: RetentionStore,
    private readonly o: RetentionOptions,
  ) {
    if (!Number.isInteger(o.retentionDays) || o.retentionDays < 1)
      throw new Error(`retention must be a whole number of days from 1 (got ${o.retentionDays})`);
  }

  /** One sweep: every record past the retention, then the tombstones. */
  async sweep(): Promise<{ records: number; tombstones: number }> {
    const cutoff = retentionCutoff(this.o.now?.() ?? new Date(), this.o.retentionDays);
    const batch = this.o.batchSize ?? 5_000;
    let records = 0;
    for (;;) {
      const deleted = await this.store.deleteRecordsBefore(cutoff, batch);
      records += deleted;
      if (deleted < batch) break;
    }
    const tombstones = await this.store.pruneTombstones(this.o.tombstoneSeconds ?? 3600);
    return { records, tombstones };
  }

  /** Sweeps now and then every interval, one sweep at a time, until `stop`. */
  start(): void {
    const run = () => {
      this.running ??= this.sweep()
        .then((result) => this.o.onSwept?.(result))
        .catch((err) => this.o.onError?.(err))
        .finally(() => {
          this.running = undefined;
        });
    };
    this.timer = setInterval(run, this.o.intervalMs ?? 60 * 60 * 1000);
    this.timer.unref();
    run();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
