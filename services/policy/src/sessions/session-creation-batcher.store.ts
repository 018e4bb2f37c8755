import { type Db, pgErrorOf } from '@ziti/platform';
import { type CreationRequest, type CreationRow, creationRows } from './sessions.store.ts';

/** Deadlock and serialization failures: a request whose statement failed so is tried once more. */
const retryable = (err: unknown) => ['40P01', '40001'].includes(pgErrorOf(err)?.code ?? '');

/**
 * Groups concurrent session creations of this replica into one statement (one commit) each:
 * the requests that arrive in one turn of the event loop go together at its end while fewer than
 * `concurrency` statements are in flight, and otherwise wait for the next one, with every request
 * that arrived meanwhile (at most `maxBatch`). Under load that is a few statements instead of one
 * per request; alone, a request waits for nothing but the end of its turn.
 * When a statement of several fails, each of its requests is tried on its own, so one request's
 * failure is its own (a deadlock or serialization failure is retried once more).
 */
export class SessionCreationBatcher {
  private readonly queues = new Map<number, { request: CreationRequest; settle: Settle }[]>();
  private running = 0;
  private scheduled = false;
  /** Statements run and requests answered so far (requests ÷ statements is the grouping achieved). */
  readonly counts = { statements: 0, requests: 0 };

  constructor(
    private readonly db: Db,
    private readonly o: { concurrency?: number; maxBatch?: number } = {},
  ) {}

  submit(request: CreationRequest, routerLimit: number): Promise<CreationRow | undefined> {
    return new Promise((resolve, reject) => {
      let queue = this.queues.get(routerLimit);
      if (!queue) this.queues.set(routerLimit, (queue = []));
      queue.push({ request, settle: { resolve, reject } });
      // After the I/O of this turn of the event loop: every request that came in with this one
      // (one read of the bus's socket holds many) goes in the same statement.
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  private pump(): void {
    for (const [limit, queue] of this.queues) {
      while (queue.length > 0 && this.running < (this.o.concurrency ?? 2)) {
        const batch = queue.splice(0, this.o.maxBatch ?? 64);
        this.running++;
        void this.run(batch, limit).finally(() => {
          this.running--;
          this.pump();
        });
      }
      if (queue.length === 0) this.queues.delete(limit);
    }
  }

  private async run(batch: { request: CreationRequest; settle: Settle }[], limit: number): Promise<void> {
    this.counts.statements++;
    this.counts.requests += batch.length;
    try {
      const rows = await creationRows(
        this.db,
        batch.map((b) => b.request),
        limit,
      );
      batch.forEach((b, i) => b.settle.resolve(rows[i]));
      return;
    } catch (err) {
      if (batch.length === 1 && !retryable(err)) return batch[0]!.settle.reject(err);
    }
    // Each request on its own, so that one request's failure stays its own; a deadlock or
    // serialization failure gets one more try.
    const alone = async (request: CreationRequest) => {
      try {
        return (await creationRows(this.db, [request], limit))[0];
      } catch (err) {
        if (!retryable(err)) throw err;
        return (await creationRows(this.db, [request], limit))[0];
      }
    };
    for (const b of batch) await alone(b.request).then(b.settle.resolve, b.settle.reject);
  }
}

interface Settle {
  resolve: (row: CreationRow | undefined) => void;
  reject: (err: unknown) => void;
}
