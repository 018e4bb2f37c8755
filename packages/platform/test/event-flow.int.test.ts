import { eventTypes } from '@ziti/contracts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { logOutbox } from '../../../test/support/outbox-log.ts';
import { createTestDatabase, infra, shuffle, uniqueName, waitFor } from '../../../test/support/infra.ts';
import {
  type Bus,
  ConsumerProgress,
  type Database,
  type Db,
  type EventEnvelope,
  type EventHandler,
  type EventSink,
  InProcessBus,
  NatsBus,
  OutboxRelay,
  type RebuildableReadModel,
  type Served,
  SourceConsumer,
  createLogger,
  createUnitOfWork,
  durableName,
  databaseMaintenance,
  maintenanceHandlers,
  migrate,
  openDatabase,
  parkedEventResults,
  queryRows,
  serveCalls,
  trackProduced,
} from '../src/index.ts';

/**
 * The event flow's guarantees (docs/adr/0008) on real infrastructure: an owner (`auth`, with a
 * `things` table standing for identities) and a consumer (`policy`) keeping a read model of it.
 * Whatever the delivery does — reorder, duplicate, redeliver after a failure, skip, carry an
 * unknown version — the read model ends equal to the owner's state.
 */
const logger = createLogger('test', (process.env.TEST_LOG as never) ?? 'silent');
const created = eventTypes.identityCreated.type;
const updated = eventTypes.identityUpdated.type;
const deleted = eventTypes.identityDeleted.type;
/** The test's things travel under the identity event types, with their own shape. */
const thingState = z.object({ id: z.string(), name: z.string(), version: z.number() });
const thingCreated = { ...eventTypes.identityCreated, schema: thingState };
const thingUpdated = { ...eventTypes.identityUpdated, schema: thingState };
const thingDeleted = { ...eventTypes.identityDeleted, schema: thingState };

interface Thing {
  id: string;
  name: string;
  version: number;
}

interface Bed {
  bus: Bus;
  nats: boolean;
  producer: Database;
  consumerDb: Database;
  relay: OutboxRelay;
  owner: Served;
  cleanup: () => Promise<void>;
}

async function makeBed(kind: 'nats' | 'memory'): Promise<Bed> {
  let bus: Bus;
  let producer: Database;
  let consumerDb: Database;
  const drops: (() => Promise<void>)[] = [];
  if (kind === 'nats') {
    const a = await createTestDatabase('evp');
    const b = await createTestDatabase('evc');
    drops.push(a.drop, b.drop);
    bus = await NatsBus.connect({ url: infra.natsUrl, name: 'test', namespace: uniqueName('ev'), logger });
    producer = await openDatabase({ url: a.url, poolSize: 20 });
    consumerDb = await openDatabase({ url: b.url });
  } else {
    bus = new InProcessBus();
    producer = await openDatabase({ pgliteMemory: true });
    consumerDb = await openDatabase({ pgliteMemory: true });
  }
  await migrate(producer, [
    {
      version: '0001_things',
      sql: 'create table things (id text primary key, name text not null, version int not null);',
    },
  ]);
  await migrate(consumerDb, [
    {
      version: '0001_copies',
      sql: `create table copies (id text primary key, name text not null, version int not null,
              position bigint not null, deleted boolean not null default false, updated_at timestamptz not null default now());
            create table applied_log (position bigint not null);`,
    },
  ]);
  // What the owner writes, kept: the relay deletes its outbox rows once published.
  await logOutbox(producer);
  // The owner's side of a resync: its event position and its states, page by page.
  const owner = serveCalls(
    bus,
    'auth',
    maintenanceHandlers(
      databaseMaintenance({
        service: 'auth',
        database: producer,
        summaryTables: {},
        entityStates: {
          identity: async (r, tx) => {
            const limit = r.limit ?? 500;
            return queryRows(
              tx,
              `select id, name, version from things where ($1::text is null or id collate "C" > $1)
              order by id collate "C" limit $2`,
              [r.after ?? null, limit],
            );
          },
        },
      }),
    ),
  );
  const relay = new OutboxRelay(producer, bus, 'auth', logger, 100);
  return {
    bus,
    nats: kind === 'nats',
    producer,
    consumerDb,
    relay,
    owner,
    cleanup: async () => {
      await relay.stop();
      await owner.drain();
      await bus.close();
      await producer.close();
      await consumerDb.close();
      for (const d of drops) await d();
    },
  };
}

/** The owner's writes: each bumps the thing's version and emits its full state. */
function ownerWrites(bed: Bed) {
  const work = createUnitOfWork(bed.producer, bed.relay, 'auth', (tx, events) => ({ tx, events }));
  return {
    put: (id: string, name: string) =>
      work(async ({ tx, events }) => {
        const [row] = await queryRows<Thing>(
          tx,
          `insert into things (id, name, version) values ($1, $2, 1)
           on conflict (id) do update set name = excluded.name, version = things.version + 1
           returning id, name, version`,
          [id, name],
        );
        await events.emit(row!.version === 1 ? thingCreated : thingUpdated, row!);
      }),
    remove: (id: string) =>
      work(async ({ tx, events }) => {
        const [row] = await queryRows<Thing>(tx, 'delete from things where id = $1 returning id, name, version', [id]);
        if (row) await events.emit(thingDeleted, row);
      }),
  };
}

/** The read model of things: every write guarded by the owner's position; deletions are tombstones. */
function copiesModel(options: { failFirst?: Set<number>; log?: boolean } = {}) {
  const attempts = new Map<number, number>();
  const apply = async (tx: Db, t: Thing, position: number, isDeleted: boolean) => {
    await queryRows(
      tx,
      `insert into copies (id, name, version, position, deleted) values ($1, $2, $3, $4, $5)
       on conflict (id) do update set name = excluded.name, version = excluded.version,
         position = excluded.position, deleted = excluded.deleted, updated_at = now()
       where copies.position < excluded.position`,
      [t.id, t.name, t.version, position, isDeleted],
    );
  };
  const handle = async (tx: Db, event: EventEnvelope) => {
    await apply(tx, event.data as Thing, event.sequence, event.type === deleted);
    if (options.log) await queryRows(tx, 'insert into applied_log (position) values ($1)', [event.sequence]);
    const n = (attempts.get(event.sequence) ?? 0) + 1;
    attempts.set(event.sequence, n);
    // A crash after the work but before the commit: the transaction rolls back, the event comes again.
    if (options.failFirst?.has(event.sequence) && n === 1) throw new Error(`crash while applying ${event.sequence}`);
  };
  const handlers: EventHandler[] = [created, updated, deleted].map((type) => ({ type, handle }));
  const readModel: RebuildableReadModel = {
    entity: 'identity',
    applyPage: async (tx, page) => {
      for (const s of page.states) await apply(tx, s as unknown as Thing, page.position, false);
      await queryRows(
        tx,
        `update copies set deleted = true, position = $4 where not deleted and position < $4
           and ($1::text is null or id collate "C" > $1) and ($2::text is null or id collate "C" <= $2)
           and not (id = any($3::text[]))`,
        [page.after ?? null, page.upTo ?? null, page.states.map((s) => String(s.id)), page.position],
      );
    },
    prune: async (tx, watermark) =>
      (await queryRows(tx, 'delete from copies where deleted and position <= $1 returning id', [watermark])).length,
  };
  return { handlers, readModel };
}

/** Consumers a test started: stopped after it whatever happened, so none leaks into the next test. */
const live = new Set<SourceConsumer>();

function consumerOf(
  bed: Bed,
  model: ReturnType<typeof copiesModel>,
  extra: Partial<ConstructorParameters<typeof SourceConsumer>[0]> = {},
) {
  const consumer = new SourceConsumer({
    owner: 'policy',
    source: 'auth',
    handlers: model.handlers,
    readModels: [model.readModel],
    database: bed.consumerDb,
    bus: bed.bus,
    logger,
    tickMs: 200,
    ...extra,
  });
  live.add(consumer);
  return consumer;
}

const ownerState = async (bed: Bed) =>
  queryRows<Thing>(bed.producer.db, 'select id, name, version from things order by id');
const copyState = async (bed: Bed) =>
  queryRows<Thing>(bed.consumerDb.db, 'select id, name, version from copies where not deleted order by id');
const lastPosition = async (bed: Bed) =>
  Number((await queryRows<{ last: string }>(bed.producer.db, 'select last from event_position'))[0]!.last);
const cursor = async (bed: Bed) =>
  (
    await queryRows<{ watermark: string; applied: unknown; resync_required: boolean }>(
      bed.consumerDb.db,
      'select watermark, applied, resync_required from event_cursors where consumer = $1',
      [durableName('policy', 'auth')],
    )
  )[0]!;

/** Converged: the watermark reached the owner's position and the copies equal the things. */
async function converged(bed: Bed) {
  const target = await lastPosition(bed);
  await waitFor(async () => Number((await cursor(bed)).watermark) >= target, `watermark ${target}`, 30_000);
  expect(await copyState(bed)).toEqual(await ownerState(bed));
}

/** The outbox rows as the relay published them (kept by `logOutbox`). */
async function outboxEvents(bed: Bed): Promise<{ subject: string; event: EventEnvelope }[]> {
  const rows = await queryRows<{ position: string; subject: string; type: string; version: number; payload: unknown }>(
    bed.producer.db,
    'select position, subject, type, version, payload from outbox_log order by position',
  );
  return rows.map((r) => ({
    subject: r.subject,
    event: {
      id: `auth:${r.position}`,
      type: r.type,
      version: r.version,
      source: 'auth',
      sequence: Number(r.position),
      occurredAt: new Date().toISOString(),
      data: typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload,
    },
  }));
}

/** Random writes on a few ids, `n` of them, `concurrency` at a time. */
async function burst(bed: Bed, n: number, concurrency = 8, ids = 12) {
  const w = ownerWrites(bed);
  const names = Array.from({ length: ids }, (_, i) => `t${i}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const k = next++;
        const id = names[k % names.length]!;
        if (k % 7 === 6) await w.remove(id);
        else await w.put(id, `name-${k}`);
      }
    }),
  );
}

for (const kind of ['nats', 'memory'] as const) {
  describe(`event flow on ${kind === 'nats' ? 'NATS + Postgres' : 'the in-process bus + PGlite'}`, () => {
    let bed: Bed;
    beforeAll(async () => {
      bed = await makeBed(kind);
    });
    afterAll(async () => bed?.cleanup());
    afterEach(async () => {
      for (const c of live) await c.stop().catch(() => undefined);
      live.clear();
    });

    it('numbers events densely in commit order, per entity in the order of its changes', async () => {
      await burst(bed, 120, 10);
      const rows = await queryRows<{ position: string; type: string; payload: Thing }>(
        bed.producer.db,
        'select position, type, payload from outbox_log order by position',
      );
      expect(rows.map((r) => Number(r.position))).toEqual(rows.map((_, i) => i + 1));
      const lastVersion = new Map<string, number>();
      for (const r of rows) {
        const t = typeof r.payload === 'string' ? (JSON.parse(r.payload) as Thing) : r.payload;
        // A later position of the same thing never shows an older version (a deletion repeats the
        // last version; a re-created thing starts at 1 again).
        if (r.type === deleted) expect(t.version).toBe(lastVersion.get(t.id));
        else if (t.version !== 1) expect(t.version).toBe((lastVersion.get(t.id) ?? 0) + 1);
        lastVersion.set(t.id, t.version);
      }
      expect(await lastPosition(bed)).toBe(rows.length);
      // The owner's read position is the last committed one.
      const { produced } = await trackProduced(() => ownerWrites(bed).put('t0', 'tracked'));
      expect(produced).toEqual({ auth: rows.length + 1 });
    });

    it('applies reordered and duplicated deliveries to the same end state, and resyncs a new consumer', async () => {
      const model = copiesModel({ log: true });
      const consumer = consumerOf(bed, model);
      // First start: the read model fills itself from the owner's state, then follows the stream.
      await consumer.start();
      await converged(bed);
      // The resync runs beside the replay of the new durable: either may reach the target first.
      await waitFor(async () => !(await cursor(bed)).resync_required, 'the first resync');
      const before = await lastPosition(bed);
      await burst(bed, 150, 6);
      const all = (await outboxEvents(bed)).filter((e) => e.event.sequence > before);
      const dupes = all
        .filter((_, i) => i % 3 === 0)
        .map((e) => ({ ...e, event: { ...e.event, id: `${e.event.id}-again` } }));
      for (const { subject, event } of shuffle([...all, ...dupes])) await bed.bus.publish(subject, event);
      await converged(bed);
      const [counts] = await queryRows<{ n: number; distinct: number }>(
        bed.consumerDb.db,
        'select count(*)::int as n, count(distinct position)::int as distinct from applied_log where position > $1',
        [before],
      );
      expect(counts!.n).toBe(counts!.distinct);
      expect(counts!.n).toBe(all.length);
      await consumer.stop();
    });

    it('redelivers what a failing consumer did not commit, and parks what keeps failing', async () => {
      const start = await lastPosition(bed);
      const fail = new Set([start + 3, start + 7, start + 8]);
      const model = copiesModel({ failFirst: fail, log: true });
      const consumer = consumerOf(bed, model, { maxAttempts: 3 });
      await consumer.start();
      await bed.relay.start();
      await burst(bed, 40, 4);
      await converged(bed);
      const [counts] = await queryRows<{ n: number; distinct: number }>(
        bed.consumerDb.db,
        'select count(*)::int as n, count(distinct position)::int as distinct from applied_log where position > $1',
        [start],
      );
      expect(counts!.n).toBe(counts!.distinct);
      // A handler that always fails: parked after maxAttempts, the flow goes on.
      const poison = copiesModel();
      const always: EventHandler = {
        type: updated,
        handle: async () => {
          throw new Error('always fails');
        },
      };
      await bed.relay.stop();
      await consumer.stop();
      const stubborn = consumerOf(
        bed,
        { ...poison, handlers: [always, ...poison.handlers.filter((h) => h.type !== updated)] },
        { maxAttempts: 2 },
      );
      await stubborn.start();
      await bed.relay.start();
      await ownerWrites(bed).put('t1', 'poison');
      const target = await lastPosition(bed);
      await waitFor(async () => Number((await cursor(bed)).watermark) >= target, 'poison parked', 30_000);
      const parked = await parkedEventResults(bed.consumerDb.db);
      expect(parked.some((p) => /handler failed 2 times/.test(p.description))).toBe(true);
      await stubborn.stop();
      await bed.relay.stop();
      // The next build's consumer processes what was parked.
      const healed = consumerOf(bed, copiesModel());
      await healed.start();
      await converged(bed);
      expect(await parkedEventResults(bed.consumerDb.db)).toEqual([]);
      await healed.stop();
    });

    it('parks an event of an unknown version or type, counts it, and lets a newer consumer process it', async () => {
      const model = copiesModel();
      const consumer = consumerOf(bed, model);
      await consumer.start();
      await bed.relay.start();
      const w = ownerWrites(bed);
      await w.put('v2', 'first');
      await converged(bed);
      await bed.relay.stop();
      // A newer owner publishes version 2 of identity.updated and a type this build does not know.
      const position = await lastPosition(bed);
      const v2: EventEnvelope = {
        id: `auth:${position + 1}`,
        type: updated,
        version: 2,
        source: 'auth',
        sequence: position + 1,
        occurredAt: new Date().toISOString(),
        data: { id: 'v2', name: 'from version 2', version: 2 },
      };
      const unknown: EventEnvelope = {
        ...v2,
        id: `auth:${position + 2}`,
        sequence: position + 2,
        type: 'identity.teleported',
        version: 1,
      };
      await bed.bus.publish(`ziti.evt.auth.${updated}`, v2);
      await bed.bus.publish('ziti.evt.auth.identity.teleported', unknown);
      await waitFor(async () => Number((await cursor(bed)).watermark) >= position + 2, 'parked events counted');
      const parked = (await parkedEventResults(bed.consumerDb.db)).map((p) => p.description).join('\n');
      expect(parked).toMatch(/version 2 of identity.updated is unknown/);
      expect(parked).toMatch(/identity.teleported is unknown/);
      expect((await copyState(bed)).find((t) => t.id === 'v2')?.name).toBe('first');
      await consumer.stop();
      // A consumer that understands version 2 processes it on start; the unknown type stays parked.
      const newer = copiesModel();
      const upgraded = consumerOf(bed, {
        ...newer,
        handlers: newer.handlers.map((h) => (h.type === updated ? { ...h, versions: [1, 2] } : h)),
      });
      await upgraded.start();
      expect((await copyState(bed)).find((t) => t.id === 'v2')?.name).toBe('from version 2');
      expect((await parkedEventResults(bed.consumerDb.db)).map((p) => p.description).join('\n')).not.toMatch(
        /version 2/,
      );
      await upgraded.stop();
      await queryRows(bed.consumerDb.db, 'delete from parked_events');
    });

    it('resyncs from the owner when a position stays missing', async () => {
      const model = copiesModel();
      const consumer = consumerOf(bed, model, { gapResyncMs: 300 });
      await consumer.start();
      const before = await lastPosition(bed);
      await burst(bed, 30, 3);
      const events = (await outboxEvents(bed)).filter((e) => e.event.sequence > before);
      const lost = events[Math.floor(events.length / 2)]!;
      for (const e of events) if (e !== lost) await bed.bus.publish(e.subject, e.event);
      await converged(bed);
      await consumer.stop();
      // Mark them published so later tests' relays do not send them again.
      await queryRows(bed.producer.db, 'update outbox set published_at = now() where published_at is null');
    });

    it('lets a read wait until the caller’s own write is applied, on every replica', async () => {
      const model = copiesModel();
      const consumer = consumerOf(bed, model);
      const here = new ConsumerProgress(
        bed.consumerDb,
        new Map([['auth', durableName('policy', 'auth')]]),
        logger,
        10_000,
      );
      const there = new ConsumerProgress(
        bed.consumerDb,
        new Map([['auth', durableName('policy', 'auth')]]),
        logger,
        10_000,
      );
      await here.start();
      await there.start();
      const applying = consumerOf(bed, model, { progress: here });
      await applying.start();
      await bed.relay.start();
      for (let i = 0; i < 20; i++) {
        const { produced } = await trackProduced(() => ownerWrites(bed).put('ryw', `value-${i}`));
        // The replica that did not apply it learns the watermark from the database's NOTIFY.
        expect(await there.waitFor(produced)).toBe(true);
        const [row] = await queryRows<Thing>(bed.consumerDb.db, "select name from copies where id = 'ryw'");
        expect(row?.name).toBe(`value-${i}`);
      }
      // A position this service will not see in time: the wait is bounded and says so.
      const quick = new ConsumerProgress(
        bed.consumerDb,
        new Map([['auth', durableName('policy', 'auth')]]),
        logger,
        300,
      );
      await quick.start();
      expect(await quick.waitFor({ auth: 10_000_000 })).toBe(false);
      // Sources this service does not consume never hold a read.
      expect(await quick.waitFor({ inventory: 10_000_000 })).toBe(true);
      await quick.stop();
      await here.stop();
      await there.stop();
      await applying.stop();
      await consumer.stop();
      await bed.relay.stop();
    });

    it('a batch in flight when a rebuild starts never leaves behind a row the rebuild knew was gone', async () => {
      // The batch applying the creation of `gx` is held open (its handler waits) while a rebuild
      // starts; the owner has meanwhile deleted `gx`. The rebuild must not apply its pages before
      // that batch committed, or the deletion (at or below the rebuild's position) is skipped and
      // `gx` stays behind as a ghost.
      const model = copiesModel();
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const held = model.handlers.map((h) => ({
        ...h,
        handle: async (tx: Db, event: EventEnvelope, events: EventSink) => {
          if (event.type === created && (event.data as Thing).id === 'gx') {
            entered();
            await gate;
          }
          await h.handle(tx, event, events);
        },
      }));
      let pageApplied!: () => void;
      const paged = new Promise<void>((r) => (pageApplied = r));
      const readModel = {
        ...model.readModel,
        applyPage: async (tx: Db, page: Parameters<typeof model.readModel.applyPage>[1]) => {
          await model.readModel.applyPage(tx, page);
          pageApplied();
        },
      };
      const consumer = consumerOf(bed, { handlers: held, readModel });
      await bed.relay.start();
      await consumer.start();
      await converged(bed);
      const owner = ownerWrites(bed);
      await owner.put('gx', 'ghost');
      await inside;
      await owner.remove('gx');
      const rebuild = consumer.resync();
      // With the batch held, a rebuild must wait: give it a bounded chance to (wrongly) page first.
      await Promise.race([paged, new Promise((r) => setTimeout(r, 1_000))]);
      release();
      await rebuild;
      await converged(bed);
      expect((await copyState(bed)).find((t) => t.id === 'gx')).toBeUndefined();
      await consumer.stop();
      await bed.relay.stop();
    });

    it.runIf(kind === 'nats')('shares one durable between replicas under a burst', async () => {
      const a = consumerOf(bed, copiesModel({ log: true }));
      const b = consumerOf(bed, copiesModel({ log: true }));
      // Two replicas of a service with no handler for these events: they only move their cursor,
      // in one statement per batch (the consumer's fast path), racing each other on real NATS.
      const idle = copiesModel();
      const c = consumerOf(bed, idle, { owner: 'inventory', handlers: [], readModels: [] });
      const d = consumerOf(bed, idle, { owner: 'inventory', handlers: [], readModels: [] });
      for (const x of [a, b, c, d]) await x.start();
      await bed.relay.start();
      const before = await lastPosition(bed);
      await burst(bed, 300, 12, 40);
      await converged(bed);
      const target = await lastPosition(bed);
      const idleCursor = async () =>
        (
          await queryRows<{ watermark: string; applied: unknown; gap_since: unknown }>(
            bed.consumerDb.db,
            'select watermark, applied, gap_since from event_cursors where consumer = $1',
            [durableName('inventory', 'auth')],
          )
        )[0]!;
      await waitFor(async () => Number((await idleCursor()).watermark) >= target, `inventory at ${target}`, 30_000);
      const end = await idleCursor();
      expect({ watermark: Number(end.watermark), applied: end.applied, gap: end.gap_since }).toEqual({
        watermark: target,
        applied: expect.toSatisfy((v: unknown) => (Array.isArray(v) ? v.length === 0 : v === '{}')),
        gap: null,
      });
      const [counts] = await queryRows<{ n: number; distinct: number }>(
        bed.consumerDb.db,
        'select count(*)::int as n, count(distinct position)::int as distinct from applied_log where position > $1',
        [before],
      );
      expect(counts!.n).toBe(counts!.distinct);
      for (const x of [a, b, c, d]) await x.stop();
      await bed.relay.stop();
    });
  });
}
