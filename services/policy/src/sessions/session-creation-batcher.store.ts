import { type Db, pgErrorOf } from '@ziti/platform';
import type { Session } from './sessions.domain.ts';
import { type FactsRequest, type FactsRow, type InsertRow, factsRows, insertRows } from './sessions.store.ts';

/** Deadlock and serialization failures: a request whose statement failed so is tried once more. */
const retryable = (err: unknown) => ['40P01', '40001'].includes(pgErrorOf(err)?.code ?? '');

/**
 * Groups concurrent session creations of this replica into few statements: the facts of the
 * creations that arrive together are read in one statement, and the inserts the domain then
 * decides on are made in one more (one commit). Under load that is a few statements instead of two
 * per request; alone, a request waits for nothing but the end of its turn of the event loop.
 */
export class SessionCreationBatcher {
  /** Statements run and requests answered so far, of each kind (requests ÷ statements is the grouping achieved). */
  readonly counts = { facts: { statements: 0, requests: 0 }, inserts: { statements: 0, requests: 0 } };
  private readonly factsGroups: StatementGroups<FactsRequest, FactsRow | undefined>;
  private readonly insertGroups: StatementGroups<Session, InsertRow>;

  constructor(db: Db, o: { concurrency?: number; maxBatch?: number } = {}) {
    this.factsGroups = new StatementGroups((limit, requests) => factsRows(db, requests, limit), this.counts.facts, o);
    this.insertGroups = new StatementGroups((_, sessions) => insertRows(db, sessions), this.counts.inserts, o);
  }

  /** The facts of one creation (`factsRows`), read together with those of the requests that came with it. */
  facts(request: FactsRequest, routerLimit: number): Promise<FactsRow | undefined> {
    return this.factsGroups.submit(routerLimit, request);
  }

  /** The insert of one session (`insertRows`), made together with those that came with it. */
  insert(session: Session): Promise<InsertRow> {
    return this.insertGroups.submit(0, session);
  }
}

/**
 * Requests answered by one statement per group: the requests of one key that arrive in one turn of
 * the event loop go together at its end while fewer than `concurrency` statements are in flight,
 * and otherwise wait for the next one, with every request that arrived meanwhile (at most
 * `maxBatch`). When a statement of several fails, each of its requests is tried on its own, so one
 * request's failure is its own (a deadlock or serialization failure is retried once more).
 */
class StatementGroups<Q, A> {
  private readonly queues = new Map<number, { request: Q; settle: Settle<A> }[]>();
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly statement: (key: number, requests: Q[]) => Promise<A[]>,
    private readonly counts: { statements: number; requests: number },
    private readonly o: { concurrency?: number; maxBatch?: number },
  ) {}

  submit(key: number, request: Q): Promise<A> {
    return new Promise((resolve, reject) => {
      let queue = this.queues.get(key);
      if (!queue) this.queues.set(key, (queue = []));
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
    for (const [key, queue] of this.queues) {
      while (queue.length > 0 && this.running < (this.o.concurrency ?? 2)) {
        const batch = queue.splice(0, this.o.maxBatch ?? 64);
        this.running++;
        void this.run(key, batch).finally(() => {
          this.running--;
          this.pump();
        });
      }
      if (queue.length === 0) this.queues.delete(key);
    }
  }

  private async run(key: number, batch: { request: Q; settle: Settle<A> }[]): Promise<void> {
    this.counts.statements++;
    this.counts.requests += batch.length;
    try {
      const answers = await this.statement(
        key,
        batch.map((b) => b.request),
      );
      batch.forEach((b, i) => b.settle.resolve(answers[i]!));
      return;
    } catch (err) {
      if (batch.length === 1 && !retryable(err)) return batch[0]!.settle.reject(err);
    }
    // Each request on its own, so that one request's failure stays its own; a deadlock or
    // serialization failure gets one more try.
    const alone = async (request: Q) => {
      try {
        return (await this.statement(key, [request]))[0]!;
      } catch (err) {
        if (!retryable(err)) throw err;
        return (await this.statement(key, [request]))[0]!;
      }
    };
    for (const b of batch) await alone(b.request).then(b.settle.resolve, b.settle.reject);
  }
}

interface Settle<A> {
  resolve: (answer: A) => void;
  reject: (err: unknown) => void;
}
