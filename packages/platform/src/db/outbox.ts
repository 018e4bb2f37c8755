import type { EventDefinition, EventState, Owner, RequestMeta } from '@ziti/contracts';
import { subjects } from '@ziti/contracts';
import type { Bus, EventEnvelope } from '../bus/bus.ts';
import {
  checkDeadline,
  currentRequestMeta,
  markIdempotencyClaimed,
  outsideRequest,
  pendingIdempotencyClaim,
  recordCommitted,
  recordProduced,
} from '../causality.ts';
import { claimIdempotentRequest } from './idempotency.ts';
import type { Logger } from '../logger.ts';
import { outboxMetrics } from '../metrics.ts';
import type { Database, DatabaseSession, Db } from './database.ts';
import { queryRows } from './database.ts';
import type { EventSink } from '../event-sink.ts';

/** The domain's port for emitting events inside the caller's transaction (pure: `../event-sink.ts`). */
export type { EventSink } from '../event-sink.ts';

/** One event for `writeOutbox`. */
export interface PendingEvent {
  type: string;
  version: number;
  data: unknown;
  /**
   * The request the event is written on behalf of (none in background work). `BufferedEventSink`
   * takes the current request's; a writer that emits later, outside the request (a batch of
   * reports), passes the meta it captured during the request.
   */
  meta?: RequestMeta;
}

/**
 * Collects the events of one transaction; `writeOutbox` numbers and stores them as the
 * transaction's last statement (docs/adr/0008).
 */
export class BufferedEventSink implements EventSink {
  readonly events: PendingEvent[] = [];

  async emit<D extends EventDefinition>(def: D, state: EventState<D>): Promise<void> {
    const meta = currentRequestMeta();
    this.events.push({ type: def.type, version: def.version, data: state, ...(meta ? { meta } : {}) });
  }
}

/** NOTIFY channel that wakes the relay of the database the events were written to. */
export const outboxChannel = 'ziti_outbox';

/**
 * Stores events in the outbox with the next positions of this service. Runs as the last statement
 * of the transaction: the update of `event_position` locks its row until the commit, so positions
 * are dense and follow the commit order; the NOTIFY is delivered at commit. A row's `id` is drawn
 * after that lock is taken (a writer waiting for it has drawn none), so ids follow positions too;
 * readers order by `position` all the same (test/outbox-ids.int.test.ts). Returns the last
 * position written (undefined when there was nothing).
 */
export async function writeOutbox(tx: Db, source: Owner, events: PendingEvent[]): Promise<number | undefined> {
  if (events.length === 0) return undefined;
  const rows = await queryRows<{ last: string | number }>(
    tx,
    `with p as (update event_position set last = last + $1 where id = 1 returning last),
          n as (select pg_notify('${outboxChannel}', '') as notified),
          e as (
            insert into outbox (position, subject, type, version, payload, meta)
            select p.last - $1 + e.ord, e.subject, e.type, e.version, e.payload::jsonb, e.meta::jsonb
              from p, n, unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[])
                   with ordinality as e(subject, type, version, payload, meta, ord)
            returning position)
     select max(position) as last from e`,
    [
      events.length,
      events.map((e) => subjects.event(source, e.type)),
      events.map((e) => e.type),
      events.map((e) => e.version),
      events.map((e) => JSON.stringify(e.data)),
      events.map((e) => (e.meta ? JSON.stringify(e.meta) : null)),
    ],
    { prepare: true },
  );
  return Number(rows[0]!.last);
}

/** The position of this service's last committed event. */
export async function currentEventPosition(db: Db): Promise<number> {
  const rows = await queryRows<{ last: string | number }>(db, 'select last from event_position where id = 1');
  return Number(rows[0]?.last ?? 0);
}

/**
 * Runs `fn` in a transaction with a sink for its events; the events are written last, the relay is
 * woken after the commit, and the positions are recorded for the current request (read-your-writes).
 */
export async function inEventTransaction<T>(
  database: Database,
  source: Owner,
  relay: OutboxRelay | undefined,
  fn: (tx: Db, events: EventSink) => Promise<T>,
): Promise<T> {
  let last: number | undefined;
  // A write whose caller would have given up before it finished is not started, and is rolled back
  // rather than committed late: a caller's 503 then means that nothing happened (causality.ts).
  checkDeadline('start');
  // A write sent with an Idempotency-Key is claimed by its first unit of work, in the same
  // transaction: a concurrent repeat waits on the claim's row and then finds it (db/idempotency.ts).
  const claim = pendingIdempotencyClaim();
  const result = await database.transaction(async (t) => {
    if (claim) await claimIdempotentRequest(t, claim);
    const sink = new BufferedEventSink();
    const value = await fn(t, sink);
    last = await writeOutbox(t, source, sink.events);
    checkDeadline('commit');
    return value;
  });
  recordCommitted();
  if (claim) markIdempotencyClaimed();
  if (last !== undefined) {
    recordProduced({ [source]: last });
    relay?.kick();
  }
  return result;
}

interface OutboxRow {
  position: string | number;
  subject: string;
  type: string;
  version: number;
  payload: unknown;
  meta: unknown;
  created_at: Date | string;
}

/** Outbox rows published per batch. */
const relayBatch = 200;

/** Advisory lock key of the relay leadership (one per database, hence per service). */
const relayLockKey = 7_355_609;

/**
 * Publishes outbox rows in position order and deletes them once published. One replica at a time is
 * the leader (a session advisory lock on a connection it keeps), so the stream carries each
 * service's events in position order; the others take over when its connection dies. The relay
 * wakes on the outbox NOTIFY of any replica's commit, and polls as a fallback. No transaction is
 * held while events are published, so consumers that call back into this service cannot block it.
 * A crash between publish and delete re-publishes; the stream drops the duplicate (message id
 * `<source>:<position>`) and consumers recognise the position.
 */
export class OutboxRelay {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private scheduled = false;
  private stopped = false;
  private session?: DatabaseSession;
  private unlisten?: () => Promise<void>;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly source: Owner,
    private readonly logger: Logger,
    private readonly intervalMs = 1_000,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    this.unlisten = await this.database
      .listen(outboxChannel, () => this.kick())
      .catch((err) => {
        this.logger.warn({ err }, 'outbox notifications unavailable; the relay polls');
        return undefined;
      });
    this.timer = setInterval(() => this.kick(), this.intervalMs);
    this.timer.unref();
    this.kick();
  }

  /**
   * Asks for a flush soon (after a commit); flushes never overlap. The flush starts on the next
   * turn of the event loop, so the kicks of one commit (the committer's own and its NOTIFY) and of
   * commits landing together start one flush, not one each.
   */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flushNow();
    });
  }

  private flushNow(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = outsideRequest(() => this.flushAll())
      .catch((err) => this.logger.warn({ err }, 'outbox relay failed; will retry'))
      .finally(() => {
        this.running = undefined;
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Takes the leadership if it is free; false when another replica has it. */
  private async lead(): Promise<DatabaseSession | undefined> {
    if (this.session) return this.session;
    const session = await this.database.session();
    try {
      const [row] = await session.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [
        relayLockKey,
      ]);
      if (row?.locked) {
        // Rows an earlier version marked published and kept (for an hour) go when a relay takes the lead.
        await session.query('delete from outbox where published_at is not null');
        this.session = session;
        return session;
      }
      session.release();
    } catch (err) {
      session.release(true);
      throw err;
    }
    return undefined;
  }

  /** Publishes everything pending now (when leader); resolves when the outbox is drained. */
  async flushAll(): Promise<void> {
    const session = await this.lead();
    if (!session) {
      outboxMetrics.notLeading(this.source);
      return;
    }
    try {
      // A batch that was not full drained the outbox as it stood: a commit after its read kicks
      // the relay again (its NOTIFY, or the committer in this process), so no empty read follows.
      while ((await this.flushBatch(session)) === relayBatch) {
        // keep going while there is work
      }
      outboxMetrics.pending(this.source, 0, undefined);
    } catch (err) {
      // The leadership lives on this connection; give it up and let any replica take it again.
      this.session = undefined;
      session.release(true);
      throw err;
    }
  }

  private async flushBatch(session: DatabaseSession): Promise<number> {
    const rows = await session.query<OutboxRow>(
      `select position, subject, type, version, payload, meta, created_at from outbox
        where published_at is null order by position limit ${relayBatch}`,
      [],
      { prepare: true },
    );
    await this.observePending(session, rows);
    const published: string[] = [];
    const messages = rows.map((row) => {
      const position = Number(row.position);
      const event: EventEnvelope = {
        id: `${this.source}:${position}`,
        type: row.type,
        version: row.version,
        source: this.source,
        sequence: position,
        occurredAt: new Date(row.created_at).toISOString(),
        data: typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload,
      };
      const meta = typeof row.meta === 'string' ? JSON.parse(row.meta) : row.meta;
      if (meta) event.meta = meta as RequestMeta;
      return { subject: row.subject, event };
    });
    try {
      if (this.bus.publishMany && messages.length > 0) {
        // Together: the in-process bus hands them to each consumer as one delivery (one transaction
        // per consumer for the batch instead of one per event).
        await this.bus.publishMany(messages);
        published.push(...rows.map((row) => String(row.position)));
      } else {
        for (const [i, m] of messages.entries()) {
          await this.bus.publish(m.subject, m.event);
          published.push(String(rows[i]!.position));
        }
      }
    } finally {
      // Published rows go at once: the outbox holds only what is still to publish, so its reads stay
      // small whatever a bulk import wrote in the last hour (marked rows kept for an hour made the
      // table grow with the write rate, and a plan cached while it was small scanned all of it).
      if (published.length > 0) {
        await session.query('delete from outbox where position = any($1::bigint[])', [published], {
          prepare: true,
        });
        outboxMetrics.published(this.source, published.length);
      }
    }
    return rows.length;
  }

  /**
   * The outbox depth and the age of its oldest row for metrics, from the batch just read (the end
   * of a cycle reports the drained outbox); only a full batch needs a count.
   */
  private async observePending(session: DatabaseSession, rows: OutboxRow[]): Promise<void> {
    let depth = rows.length;
    if (depth === relayBatch) {
      const [row] = await session.query<{ depth: string | number }>(
        'select count(*) as depth from outbox where published_at is null',
      );
      depth = Number(row?.depth ?? depth);
    }
    outboxMetrics.pending(this.source, depth, rows[0]?.created_at);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await this.unlisten?.().catch(() => undefined);
    const session = this.session;
    this.session = undefined;
    outboxMetrics.notLeading(this.source);
    if (session) {
      await session.query('select pg_advisory_unlock($1)', [relayLockKey]).catch(() => undefined);
      session.release();
    }
  }
}

/** The caller's transaction with its stores and event sink (see `inEventTransaction`). */
export function createUnitOfWork<S>(
  database: Database,
  relay: OutboxRelay | undefined,
  source: Owner,
  bind: (tx: Db, events: EventSink) => S,
): <T>(fn: (stores: S) => Promise<T>) => Promise<T> {
  return (fn) => inEventTransaction(database, source, relay, (t, events) => fn(bind(t, events)));
}

/** The sink of read-only contexts: emitting there is a programming error (changes go through a unit of work). */
export const readOnlyEventSink: EventSink = {
  emit: async (def) => {
    throw new Error(`event ${def.type} emitted from a read-only context`);
  },
};

/**
 * Stores bound to the pool, outside any transaction, for reads on the request path: no
 * BEGIN/COMMIT round trips, and independent reads can run concurrently. Emitting an event here
 * is a programming error: changes go through `createUnitOfWork`.
 */
export function createReader<S>(
  database: Database,
  bind: (db: Db, events: EventSink) => S,
): <T>(fn: (stores: S) => Promise<T>) => Promise<T> {
  const stores = bind(database.db, readOnlyEventSink);
  return (fn) => fn(stores);
}
