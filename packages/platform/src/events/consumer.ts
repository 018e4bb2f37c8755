import {
  ApiError,
  type EntityStateType,
  type EventDefinition,
  type EntityOwner,
  type Owner,
  publishedEvent,
  subjects,
} from '@ziti/contracts';
import type { z } from 'zod';
import type { Bus, Consumer, EventDelivery, EventEnvelope } from '../bus/bus.ts';
import { RetryEvents } from '../bus/bus.ts';
import type { Database, Db } from '../db/database.ts';
import { isEmbedded, queryRows } from '../db/database.ts';
import type { EventSink, OutboxRelay } from '../db/outbox.ts';
import { inEventTransaction } from '../db/outbox.ts';
import type { Logger } from '../logger.ts';
import { consumerMetrics } from '../metrics.ts';
import { type OwnerStatesPage, ownerEntityStates, ownerEventPosition } from '../maintenance.ts';
import { unavailableDependency } from '../unavailable.ts';
import type { ConsumerProgress } from './progress.ts';
import { cursorChannel } from './progress.ts';

/** What a service does with one type of another service's events. */
export interface EventHandler {
  /** e.g. `identity.deleted`. */
  type: string;
  /** Versions of `data` this handler understands; default: the one its owner publishes now. */
  versions?: number[];
  /** Runs in the consumer's transaction; events emitted on `events` leave with its commit. */
  handle(tx: Db, event: EventEnvelope, events: EventSink): Promise<void>;
}

/**
 * The handler of one event type, declared through its definition: `handle` receives the event's
 * data decoded by the definition's schema, or by `read` when the handler needs less than the whole
 * state (fields that every version it accepts carries). Data that does not decode fails the
 * delivery, and the consumer parks the event after its attempts, as for any failing handler.
 */
export function on<D extends EventDefinition, S extends z.ZodType = D['schema']>(
  def: D,
  handle: (tx: Db, data: z.output<S>, event: EventEnvelope, events: EventSink) => Promise<unknown>,
  options: { versions?: number[]; read?: S } = {},
): EventHandler {
  const schema = (options.read ?? def.schema) as S;
  return {
    type: def.type,
    ...(options.versions ? { versions: options.versions } : {}),
    handle: async (tx, event, events) => {
      await handle(tx, parseEventData(schema, event) as z.output<S>, event, events);
    },
  };
}

/** A read model kept from a source's events that can be rebuilt from its owner's current state. */
export interface RebuildableReadModel {
  /** The owner's entity type whose states (`entityStates`) fill it. */
  entity: EntityStateType;
  /**
   * Applies one page of the owner's states read at `page.position`: each state only over an older
   * one, and live rows with ids in (`after`, `upTo`] that the page lacks become tombstones, again
   * only over older rows. Safe against events applied before or after, in any order.
   */
  applyPage(tx: Db, page: OwnerStatesPage): Promise<void>;
  /** Drops what can no longer matter once every event up to `watermark` is applied (old tombstones). */
  prune?(tx: Db, watermark: number): Promise<number>;
  /** After every page was applied: state derived from the read model can be derived again. */
  rebuilt?(tx: Db, events: EventSink): Promise<void>;
}

/** Everything one service consumes of one source: one durable consumer, replicas share it. */
export interface EventSubscription {
  source: EntityOwner;
  handlers: EventHandler[];
  readModels?: RebuildableReadModel[];
}

export interface SourceConsumerOptions {
  owner: Exclude<Owner, 'gateway'>;
  source: EntityOwner;
  handlers: EventHandler[];
  readModels: RebuildableReadModel[];
  database: Database;
  bus: Bus;
  relay?: OutboxRelay;
  logger: Logger;
  progress?: ConsumerProgress;
  /** Deliveries of one event before a failing handler parks it. */
  maxAttempts?: number;
  /** How long a missing position may stay missing before the read models resync from the owner. */
  gapResyncMs?: number;
  tickMs?: number;
}

interface CursorRow {
  watermark: string | number;
  applied: (string | number)[] | string;
  resync_required: boolean;
  gap_since: Date | string | null;
  /** Set while a rebuild from the owner's state at this position runs: events at or below it are its. */
  resync_position: string | number | null;
}

const parseApplied = (v: CursorRow['applied']): number[] =>
  (typeof v === 'string' ? v.replace(/[{}]/g, '').split(',').filter(Boolean) : v).map(Number);

/** The pauses before applying a batch again after its connection was lost (then the bus redelivers it). */
const lostConnectionRetryMs = [0, 50, 250];

/** Longest a statement of a consumer's transaction may run. */
const statementTimeoutMs = 30_000;

/** The durable name of `owner`'s consumer of `source`'s events. */
export const durableName = (owner: string, source: string) => `${owner}-from-${source}`;

/**
 * Applies one source's events to one service (docs/adr/0008): batches in one transaction under
 * the cursor's row lock, skipping positions already applied (redeliveries, duplicates) and
 * parking what this build cannot process; rebuilds its read models from the owner's state on
 * first start, when the durable is new, and when a position stays missing; reports progress so
 * reads can wait for a caller's own writes.
 */
export class SourceConsumer {
  readonly durable: string;
  private consumer?: Consumer;
  private timer?: NodeJS.Timeout;
  private ticking?: Promise<void>;
  private lastPrune = 0;
  private retryMs = 0;
  private stopped = false;
  private gapReported = 0;
  private readonly handlers: Map<string, EventHandler>;
  private readonly warned = new Set<string>();

  constructor(private readonly o: SourceConsumerOptions) {
    this.durable = durableName(o.owner, o.source);
    this.handlers = new Map(o.handlers.map((h) => [h.type, h]));
  }

  async start(): Promise<void> {
    await queryRows(
      this.o.database.db,
      'insert into event_cursors (consumer, source) values ($1, $2) on conflict do nothing',
      [this.durable, this.o.source],
    );
    this.consumer = await this.o.bus.consume({
      durable: this.durable,
      subject: `${subjects.event(this.o.source, '')}>`,
      handler: (batch) => this.onBatch(batch),
    });
    // A new durable replays the stream from its start; read models rebuild from their owners in case
    // the stream no longer holds everything (positions they already have are skipped either way).
    if (this.consumer.fresh && this.o.readModels.length > 0) await this.requireResync('the durable consumer is new');
    await this.retryParked();
    this.timer = setInterval(() => void this.tick(), this.o.tickMs ?? 5_000);
    this.timer.unref();
    void this.tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.consumer?.stop();
    await this.ticking;
  }

  /** Resync (when required or when a gap outlived the stream) and pruning; one at a time. */
  tick(): Promise<void> {
    this.ticking ??= this.observe()
      .then(() => this.maintain())
      .then(() => {
        this.retryMs = 0;
      })
      .catch((err) => {
        // The owner may simply not be up yet (services start in any order): retry soon, backing off.
        this.retryMs = Math.min(5_000, Math.max(250, this.retryMs * 2));
        const unavailable = err instanceof ApiError && (err.code === 'SERVICE_UNAVAILABLE' || err.code === 'TIMEOUT');
        if (unavailable)
          this.o.logger.info({ consumer: this.durable, retryMs: this.retryMs }, `resync waits: ${err.message}`);
        else this.o.logger.warn({ err, consumer: this.durable }, 'event consumer maintenance failed');
        if (!this.stopped) setTimeout(() => void this.tick(), this.retryMs).unref();
      })
      .finally(() => {
        this.ticking = undefined;
      });
    return this.ticking;
  }

  /** The consumer's lag on the stream and its parked events, for metrics; never fails the tick. */
  private async observe(): Promise<void> {
    try {
      const [parked] = await queryRows<{ count: string | number }>(
        this.o.database.db,
        'select count(*)::int as count from parked_events where consumer = $1 and source = $2',
        [this.durable, this.o.source],
      );
      consumerMetrics.parked(this.durable, this.o.source, Number(parked?.count ?? 0));
      const pending = await this.consumer?.pending?.();
      if (pending !== undefined) consumerMetrics.pending(this.durable, this.o.source, pending);
    } catch (err) {
      this.o.logger.debug({ err, consumer: this.durable }, 'consumer metrics not updated');
    }
  }

  private async cursor(db: Db, lock = false): Promise<CursorRow> {
    const [row] = await queryRows<CursorRow>(
      db,
      `select watermark, applied, resync_required, gap_since, resync_position from event_cursors
        where consumer = $1 and source = $2${lock ? ' for update' : ''}`,
      [this.durable, this.o.source],
      { prepare: true },
    );
    if (!row) throw new Error(`event cursor ${this.durable} is missing`);
    return row;
  }

  private async maintain(): Promise<void> {
    const cursor = await this.cursor(this.o.database.db);
    const gapMs = cursor.gap_since ? Date.now() - new Date(cursor.gap_since).getTime() : 0;
    const gap = gapMs > (this.o.gapResyncMs ?? 5 * 60_000);
    const missing = Number(cursor.watermark) + 1;
    if (gap && this.o.readModels.length === 0) {
      // Nothing to rebuild from: skipping the position would lose what its handler does. The event
      // is still in the stream (7 days) and comes when whoever holds it lets go; keep waiting, loudly.
      if (this.gapReported !== missing) {
        this.gapReported = missing;
        this.o.logger.error(
          { consumer: this.durable, missing, forSeconds: Math.round(gapMs / 1000) },
          'an event position is missing; waiting for it',
        );
      }
    } else if (gap && !cursor.resync_required) {
      await this.requireResync(`position ${missing} has been missing for ${Math.round(gapMs / 1000)} s`);
    }
    if (cursor.resync_required || (gap && this.o.readModels.length > 0)) await this.resync();
    if (Date.now() - this.lastPrune > 10 * 60_000) {
      this.lastPrune = Date.now();
      // A parked event may still be applied later: keep every tombstone it could need.
      const [parked] = await queryRows<{ oldest: string | number | null }>(
        this.o.database.db,
        'select min(position) as oldest from parked_events where consumer = $1 and source = $2',
        [this.durable, this.o.source],
      );
      const oldestParked = parked?.oldest === null || parked?.oldest === undefined ? Infinity : Number(parked.oldest);
      const watermark = Math.min(Number(cursor.watermark), oldestParked - 1);
      for (const model of this.o.readModels) {
        if (!model.prune) continue;
        const pruned = await this.o.database.transaction((tx) => model.prune!(tx, watermark));
        if (pruned > 0)
          this.o.logger.info({ consumer: this.durable, entity: model.entity, pruned }, 'tombstones pruned');
      }
    }
  }

  private async requireResync(reason: string): Promise<void> {
    this.o.logger.warn({ consumer: this.durable, reason }, 'read models will be resynced from the owner');
    await queryRows(
      this.o.database.db,
      'update event_cursors set resync_required = true, updated_at = now() where consumer = $1 and source = $2',
      [this.durable, this.o.source],
    );
  }

  /**
   * Rebuilds the read models from the owner's current state, then moves the watermark to the
   * owner's position read first: every page reflects at least that position, and everything after
   * it is still to come on the durable (which existed before the position was read).
   */
  async resync(): Promise<void> {
    const started = Date.now();
    const position = await ownerEventPosition(this.o.bus, this.o.source);
    // From here on, batches leave positions up to `position` to this rebuild. Taking the cursor's
    // lock waits for a batch in flight, so everything it wrote is there for the pages to see (and
    // to tombstone): no event at or below the position is applied after a page that covered it.
    await this.o.database.transaction(async (tx) => {
      await this.cursor(tx, true);
      await queryRows(
        tx,
        `update event_cursors set resync_position = greatest(coalesce(resync_position, 0), $3), updated_at = now()
          where consumer = $1 and source = $2`,
        [this.durable, this.o.source, position],
      );
    });
    let states = 0;
    for (const model of this.o.readModels) {
      for await (const page of ownerEntityStates(this.o.bus, this.o.source, model.entity)) {
        await this.o.database.transaction((tx) => model.applyPage(tx, page));
        states += page.states.length;
      }
      if (model.rebuilt)
        await inEventTransaction(this.o.database, this.o.owner, this.o.relay, (tx, events) =>
          model.rebuilt!(tx, events),
        );
    }
    const watermark = await this.o.database.transaction(async (tx) => {
      const cursor = await this.cursor(tx, true);
      const next = this.advance(Math.max(Number(cursor.watermark), position), parseApplied(cursor.applied));
      await this.saveCursor(tx, next, { resynced: true, previous: Number(cursor.watermark) });
      // A rebuild of another replica that read a later position keeps its claim.
      await queryRows(
        tx,
        `update event_cursors set resync_position = null
          where consumer = $1 and source = $2 and resync_position <= $3`,
        [this.durable, this.o.source, position],
      );
      return next.watermark;
    });
    this.o.progress?.advance(this.o.source, watermark);
    this.o.logger.info(
      { consumer: this.durable, position, watermark, states, ms: Date.now() - started },
      'read models resynced from the owner',
    );
  }

  /** The contiguous watermark from `watermark` and the positions applied above it. */
  private advance(watermark: number, applied: Iterable<number>): { watermark: number; applied: number[] } {
    const above = new Set([...applied].filter((p) => p > watermark));
    let w = watermark;
    while (above.delete(w + 1)) w++;
    return { watermark: w, applied: [...above].sort((a, b) => a - b) };
  }

  private async saveCursor(
    tx: Db,
    next: { watermark: number; applied: number[] },
    o: { resynced?: boolean; previous: number },
  ): Promise<void> {
    // A watermark that moved is announced at commit (`pg_notify`), in the same statement.
    const moved = next.watermark > o.previous;
    await queryRows(
      tx,
      `update event_cursors set watermark = $3, applied = $4::bigint[],
          gap_since = case when cardinality($4::bigint[]) = 0 then null
                           when $3::bigint > $5::bigint then now()
                           else coalesce(gap_since, now()) end,
          ${o.resynced ? 'resync_required = false, resynced_at = now(),' : ''} updated_at = now()
        ${moved ? `from (select pg_notify('${cursorChannel}', $6)) n` : ''}
        where consumer = $1 and source = $2`,
      [
        this.durable,
        this.o.source,
        next.watermark,
        next.applied,
        o.previous,
        ...(moved ? [`${this.durable}|${this.o.source}|${next.watermark}`] : []),
      ],
      { prepare: true },
    );
  }

  private async onBatch(batch: EventDelivery[]): Promise<void> {
    try {
      await this.applyOverLostConnections(batch);
      return;
    } catch (err) {
      // The database is away: one by one would fail alike; the bus redelivers the batch.
      if (unavailableDependency(err) === 'database') throw err;
      if (batch.length > 1) this.o.logger.warn({ err, consumer: this.durable }, 'event batch failed; one by one');
      else return this.failed(batch[0]!, err);
    }
    const retry = new Set<string>();
    for (const d of batch) {
      try {
        await this.apply([d]);
      } catch (err) {
        await this.failed(d, err).catch(() => retry.add(d.event.id));
      }
    }
    if (retry.size > 0) throw new RetryEvents(retry);
  }

  /**
   * Applies the batch, again at once on a fresh connection when the one it ran on was lost (a
   * terminated backend, a restarted Postgres behind a proxy): a cut connection costs milliseconds,
   * not the bus's redelivery delay. Applying twice is harmless: positions already applied are skipped
   * under the cursor's lock. A database that stays away fails after the last try.
   */
  private async applyOverLostConnections(batch: EventDelivery[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.apply(batch);
      } catch (err) {
        if (attempt >= lostConnectionRetryMs.length || unavailableDependency(err) !== 'database') throw err;
        this.o.logger.warn({ err, consumer: this.durable, attempt }, 'database connection lost under a batch; again');
        await new Promise((r) => setTimeout(r, lostConnectionRetryMs[attempt]));
      }
    }
  }

  /**
   * A delivery whose handler failed: retried later, parked once it failed `maxAttempts` times. A
   * database that was away is no fault of the event's: that failure never parks it.
   */
  private async failed(d: EventDelivery, err: unknown): Promise<void> {
    const max = this.o.maxAttempts ?? 5;
    const log = { err, consumer: this.durable, eventId: d.event.id, type: d.event.type, attempt: d.attempt };
    if (d.attempt < max || unavailableDependency(err) === 'database') {
      this.o.logger.warn(log, 'event handler failed; will retry');
      throw new RetryEvents(new Set([d.event.id]));
    }
    this.o.logger.error(log, 'event handler keeps failing; event parked');
    await this.apply([d], `handler failed ${d.attempt} times: ${(err as Error)?.message ?? String(err)}`);
  }

  /** Applies deliveries in one transaction; with `park`, parks them instead (a poison event). */
  private async apply(batch: EventDelivery[], park?: string): Promise<void> {
    // Events this service has no handler for (auth's `apiSession.created` at inventory, on every
    // login) only move the cursor: one statement instead of a transaction of six round trips.
    if (!park && batch.every(({ event }) => this.onlyAdvancesCursor(event))) {
      const watermark = await this.advanceCursor(batch);
      this.o.progress?.advance(this.o.source, watermark);
      this.observeLag(batch);
      return;
    }
    let watermark = 0;
    /** When the events applied now (not those applied before: redeliveries) were committed at their owner. */
    const committedAt: string[] = [];
    await inEventTransaction(this.o.database, this.o.owner, this.o.relay, async (tx, events) => {
      committedAt.length = 0;
      // A handler stuck on a lock or a dead connection must fail (and be retried), not hold its events.
      // PGlite's one connection has neither: the statement would only cost a round trip there.
      if (!isEmbedded(tx)) await queryRows(tx, `set local statement_timeout = ${statementTimeoutMs}`);
      const cursor = await this.cursor(tx, true);
      const previous = Number(cursor.watermark);
      const applied = new Set(parseApplied(cursor.applied));
      // A rebuild in progress covers every position up to its own: those are left to it.
      const rebuilding = Number(cursor.resync_position ?? 0);
      const ordered = [...batch].sort((a, b) => a.event.sequence - b.event.sequence);
      for (const { event } of ordered) {
        const position = event.sequence;
        if (position <= previous || applied.has(position) || position <= rebuilding) continue;
        if (event.source !== this.o.source) {
          // Not this source's numbering: applying it would corrupt the cursor.
          this.o.logger.error({ consumer: this.durable, eventId: event.id }, 'event from another source; ignored');
          continue;
        }
        const reason = park ?? this.unprocessable(event);
        if (reason) await this.park(tx, event, reason);
        else await this.handlers.get(event.type)?.handle(tx, event, events);
        applied.add(position);
        committedAt.push(event.occurredAt);
      }
      const next = this.advance(previous, applied);
      await this.saveCursor(tx, next, { previous });
      watermark = next.watermark;
    });
    this.o.progress?.advance(this.o.source, watermark);
    if (!park) consumerMetrics.applied(this.durable, this.o.source, committedAt);
  }

  /** How far behind its owner each event was applied (`ziti_event_consumer_lag_seconds`). */
  private observeLag(batch: EventDelivery[]): void {
    consumerMetrics.applied(
      this.durable,
      this.o.source,
      batch.map((d) => d.event.occurredAt),
    );
  }

  /** An event of this source, known to this build, that no handler of this service cares about. */
  private onlyAdvancesCursor(event: EventEnvelope): boolean {
    return event.source === this.o.source && !this.handlers.has(event.type) && !this.unprocessable(event);
  }

  /**
   * What `apply` does for a batch without handlers, in one statement on the pool: merges the
   * batch's positions into the cursor (skipping those applied or left to a rebuild), moves the
   * watermark as `advance` does, saves it as `saveCursor` does and notifies a new watermark at the
   * statement's commit. The cursor's row lock (`for update`, which reads its latest version) orders
   * it with the batches of other replicas. A short update behind that lock needs no
   * statement_timeout: it waits only for a batch transaction, which has its own. Returns the watermark.
   */
  private async advanceCursor(batch: EventDelivery[]): Promise<number> {
    const [row] = await queryRows<{ watermark: string | number }>(
      this.o.database.db,
      `with cursor as (
         select watermark, applied, gap_since, coalesce(resync_position, 0) as rebuilding from event_cursors
          where consumer = $1 and source = $2 for update),
       above as (
         select p from cursor, unnest(cursor.applied) p where p > cursor.watermark
         union
         select p from cursor, unnest($3::bigint[]) p where p > cursor.watermark and p > cursor.rebuilding),
       -- positions above the watermark, in order, are contiguous while none is missing before them
       ranked as (select p, p - cursor.watermark = row_number() over (order by p) as contiguous from cursor, above),
       next as (
         select cursor.watermark as previous, cursor.gap_since,
                cursor.watermark + count(r.p) filter (where r.contiguous) as watermark,
                coalesce(array_agg(r.p order by r.p) filter (where not r.contiguous), '{}') as applied
           from cursor left join ranked r on true group by cursor.watermark, cursor.gap_since),
       saved as (
         update event_cursors c set watermark = n.watermark, applied = n.applied,
                gap_since = case when cardinality(n.applied) = 0 then null
                                 when n.watermark > n.previous then now()
                                 else coalesce(n.gap_since, now()) end,
                updated_at = now()
           from next n where c.consumer = $1 and c.source = $2
         returning n.previous, n.watermark)
       select watermark, case when watermark > previous then pg_notify('${cursorChannel}', $4::text || watermark) end as notified
         from saved`,
      [this.durable, this.o.source, batch.map((d) => d.event.sequence), `${this.durable}|${this.o.source}|`],
      { prepare: true },
    );
    if (!row) throw new Error(`event cursor ${this.durable} is missing`);
    return Number(row.watermark);
  }

  /** Why this build cannot process the event (it is parked), or undefined. */
  private unprocessable(event: EventEnvelope): string | undefined {
    const def = publishedEvent(this.o.source, event.type);
    if (!def) return `event type ${event.type} is unknown to this version`;
    const handler = this.handlers.get(event.type);
    if (!handler) return undefined; // known, and of no interest here
    const versions = handler.versions ?? [def.version];
    if (!versions.includes(event.version))
      return `version ${event.version} of ${event.type} is unknown to this version`;
    return undefined;
  }

  private async park(tx: Db, event: EventEnvelope, reason: string): Promise<void> {
    await queryRows(
      tx,
      `insert into parked_events (consumer, source, position, type, version, reason, envelope)
       values ($1, $2, $3, $4, $5, $6, $7::jsonb) on conflict do nothing`,
      [this.durable, this.o.source, event.sequence, event.type, event.version, reason, JSON.stringify(event)],
    );
    const key = `${event.type}@${event.version}:${reason}`;
    const level = this.warned.has(key) ? 'debug' : 'warn';
    this.warned.add(key);
    this.o.logger[level]({ consumer: this.durable, eventId: event.id, type: event.type, reason }, 'event parked');
  }

  /**
   * Parked events this build can now process (a newer consumer), in position order. Each is
   * handled and removed in one transaction; handlers are order-safe, so applying late is.
   */
  async retryParked(): Promise<number> {
    const rows = await queryRows<{ position: string | number; envelope: unknown; reason: string }>(
      this.o.database.db,
      'select position, envelope, reason from parked_events where consumer = $1 and source = $2 order by position',
      [this.durable, this.o.source],
    );
    let done = 0;
    for (const row of rows) {
      const event = (typeof row.envelope === 'string' ? JSON.parse(row.envelope) : row.envelope) as EventEnvelope;
      if (this.unprocessable(event)) continue;
      try {
        await inEventTransaction(this.o.database, this.o.owner, this.o.relay, async (tx, events) => {
          await this.handlers.get(event.type)?.handle(tx, event, events);
          await queryRows(tx, 'delete from parked_events where consumer = $1 and source = $2 and position = $3', [
            this.durable,
            this.o.source,
            event.sequence,
          ]);
        });
        done++;
      } catch (err) {
        this.o.logger.warn({ err, consumer: this.durable, eventId: event.id }, 'parked event still fails');
      }
    }
    if (done > 0) this.o.logger.info({ consumer: this.durable, processed: done }, 'parked events processed');
    return done;
  }
}

/** The parked events of a service's consumers, for its integrity results. */
export async function parkedEventCounts(
  db: Db,
): Promise<{ consumer: string; source: string; reason: string; count: number }[]> {
  return queryRows(
    db,
    `select consumer, source, reason, count(*)::int as count from parked_events
      group by consumer, source, reason order by consumer, source, reason`,
  );
}

/**
 * The event's `data` as its contract describes it. A shape that does not match is a producer bug:
 * the handler fails, so the event is retried and finally parked instead of being lost.
 */
export function parseEventData<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { message: string } } },
  event: EventEnvelope,
): T {
  const parsed = schema.safeParse(event.data);
  if (!parsed.success) throw new Error(`${event.type} v${event.version} ${event.id} does not match its contract`);
  return parsed.data;
}

/** Integrity results for parked events: kept for a newer consumer, never fixed by a check. */
export async function parkedEventResults(db: Db): Promise<{ description: string; fixed: boolean }[]> {
  return (await parkedEventCounts(db)).map((p) => ({
    description: `${p.count} event(s) of ${p.source} parked by ${p.consumer}: ${p.reason}`,
    fixed: false,
  }));
}
