import type { Owner } from '@ziti/contracts';
import { subjects } from '@ziti/contracts';
import type { Bus, Consumer, EventEnvelope } from '../bus/bus.ts';
import type { Logger } from '../logger.ts';
import type { Database, Db } from './database.ts';
import { queryRows } from './database.ts';

/** The domain's port for emitting events inside the caller's transaction. */
export interface EventSink {
  emit(type: string, data: unknown, version?: number): Promise<void>;
}

/** Writes events to the outbox table of the current transaction. */
export class OutboxEventSink implements EventSink {
  constructor(
    private readonly tx: Db,
    private readonly source: Owner,
  ) {}

  async emit(type: string, data: unknown, version = 1): Promise<void> {
    await queryRows(this.tx, 'insert into outbox (subject, type, version, payload) values ($1, $2, $3, $4)', [
      subjects.event(this.source, type),
      type,
      version,
      JSON.stringify(data),
    ]);
  }
}

interface OutboxRow {
  id: string | number;
  subject: string;
  type: string;
  version: number;
  payload: unknown;
  created_at: Date | string;
}

/**
 * Publishes outbox rows to the bus, oldest first, and marks them published. Replicas share the
 * work through `for update skip locked`; a crash between publish and mark re-publishes, which the
 * stream drops as a duplicate (the row id is the message id) and consumers ignore.
 */
export class OutboxRelay {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;
  private lastCleanup = 0;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly source: Owner,
    private readonly logger: Logger,
    private readonly intervalMs = 1_000,
  ) {}

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.kick(), this.intervalMs);
    this.timer.unref();
    this.kick();
  }

  /** Asks for a flush soon (after a commit); flushes never overlap. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.flushAll()
      .catch((err) => this.logger.warn({ err }, 'outbox relay failed; will retry'))
      .finally(() => {
        this.running = undefined;
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Publishes everything pending now; resolves when the outbox is drained (used by tests and shutdown). */
  async flushAll(): Promise<void> {
    while ((await this.flushBatch()) > 0) {
      // keep going while there is work
    }
    if (Date.now() - this.lastCleanup > 60_000) {
      this.lastCleanup = Date.now();
      await queryRows(this.database.db, "delete from outbox where published_at < now() - interval '1 hour'");
    }
  }

  private async flushBatch(): Promise<number> {
    return this.database.transaction(async (t) => {
      const rows = await queryRows<OutboxRow>(
        t,
        `select id, subject, type, version, payload, created_at from outbox
          where published_at is null order by id limit 100 for update skip locked`,
      );
      for (const row of rows) {
        const event: EventEnvelope = {
          id: `${this.source}:${row.id}`,
          type: row.type,
          version: row.version,
          source: this.source,
          sequence: Number(row.id),
          occurredAt: new Date(row.created_at).toISOString(),
          data: typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload,
        };
        await this.bus.publish(row.subject, event);
      }
      if (rows.length > 0) {
        await queryRows(t, 'update outbox set published_at = now() where id = any($1::bigint[])', [
          rows.map((r) => String(r.id)),
        ]);
      }
      return rows.length;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}

/**
 * Consumes events durably and idempotently: each event is handled in one transaction together
 * with its `processed_events` row, so a redelivered event is skipped.
 */
export async function startEventConsumer(
  bus: Bus,
  database: Database,
  options: { durable: string; subject: string; handle: (tx: Db, event: EventEnvelope) => Promise<void> },
): Promise<Consumer> {
  return bus.consume({
    durable: options.durable,
    subject: options.subject,
    handler: (event) =>
      database.transaction(async (t) => {
        const fresh = await queryRows(
          t,
          'insert into processed_events (consumer, event_id) values ($1, $2) on conflict do nothing returning event_id',
          [options.durable, event.id],
        );
        if (fresh.length === 0) return;
        await options.handle(t, event);
      }),
  });
}

/** The caller's transaction with its stores and event sink, plus a relay kick after commit. */
export function createUnitOfWork<S>(
  database: Database,
  relay: OutboxRelay | undefined,
  source: Owner,
  bind: (tx: Db, events: EventSink) => S,
): <T>(fn: (stores: S) => Promise<T>) => Promise<T> {
  return async (fn) => {
    const result = await database.transaction((t) => fn(bind(t, new OutboxEventSink(t, source))));
    relay?.kick();
    return result;
  };
}

/**
 * Stores bound to the pool, outside any transaction, for reads on the request path: no
 * BEGIN/COMMIT round trips, and independent reads can run concurrently. Emitting an event here
 * is a programming error: changes go through `createUnitOfWork`.
 */
export function createReader<S>(
  database: Database,
  bind: (db: Db, events: EventSink) => S,
): <T>(fn: (stores: S) => Promise<T>) => Promise<T> {
  const readOnly: EventSink = {
    emit: async (type) => {
      throw new Error(`event ${type} emitted from a read-only context`);
    },
  };
  const stores = bind(database.db, readOnly);
  return (fn) => fn(stores);
}
