import { eventTypes } from '@ziti/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, shuffle, waitFor } from '../../../test/support/infra.ts';
import {
  ConsumerProgress,
  type Database,
  type EventDelivery,
  type EventEnvelope,
  type EventHandler,
  SourceConsumer,
  createLogger,
  cursorChannel,
  durableName,
  migrate,
  openDatabase,
  queryRows,
} from '../src/index.ts';
import { BatchBus } from './support/batch-bus.ts';

/**
 * A batch of events the consumer has no handler for only moves its cursor, in one statement on the
 * pool instead of a transaction. It must leave `event_cursors` exactly as the transaction path
 * would, stay ordered with other replicas' batches under the cursor's row lock, and announce a new
 * watermark like the transaction path does. Real Postgres, one database per test.
 */
const logger = createLogger('test', (process.env.TEST_LOG as never) ?? 'silent');
const handled = eventTypes.identityDeleted;
/** Of no interest to the consumers below unless a test gives them a handler for it. */
const unhandled = eventTypes.apiSessionCreated;

const delivery = (
  position: number,
  def: { type: string; version: number } = unhandled,
  source = 'auth',
): EventDelivery => ({
  attempt: 1,
  event: {
    id: `${source}:${position}`,
    type: def.type,
    version: def.version,
    source,
    sequence: position,
    occurredAt: new Date().toISOString(),
    data: { id: `x-${position}` },
  } as EventEnvelope,
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** A fresh database with the platform's tables and a table the handlers below write to. */
async function makeDatabase(kind: 'postgres' | 'pglite' = 'postgres'): Promise<{ url: string; database: Database }> {
  let url = '';
  let database: Database;
  if (kind === 'postgres') {
    const created = await createTestDatabase('cfp');
    cleanups.push(created.drop);
    url = created.url;
    database = await openDatabase({ url, poolSize: 20 });
  } else {
    // The embedded database of `npm start` runs the same statement.
    database = await openDatabase({ pgliteMemory: true });
  }
  cleanups.push(() => database.close());
  await migrate(database, [
    { version: '0001_effects', sql: 'create table effects (consumer text not null, position bigint not null);' },
  ]);
  return { url, database };
}

/** Writes one row per handled event: how often `owner`'s handler ran. */
const effectHandler = (type: string, owner: string): EventHandler => ({
  type,
  handle: async (tx, event) => {
    await queryRows(tx, 'insert into effects (consumer, position) values ($1, $2)', [owner, event.sequence]);
  },
});

interface Started {
  consumer: SourceConsumer;
  deliver: (batch: EventDelivery[]) => Promise<void>;
  /** Transactions the consumer opened since it started (the fast path opens none). */
  transactions: () => number;
  /** The consumer's own progress (none with `withProgress: false`). */
  progress: ConsumerProgress;
}

/** A started consumer of auth's events whose batches the test delivers itself. */
async function startConsumer(
  database: Database,
  owner: 'inventory' | 'pki-enrollment' | 'policy',
  handlers: EventHandler[],
  { withProgress = true } = {},
): Promise<Started> {
  const bus = new BatchBus();
  let transactions = 0;
  const counted: Database = {
    ...database,
    transaction: (fn) => {
      transactions++;
      return database.transaction(fn);
    },
  };
  const progress = new ConsumerProgress(database, new Map([['auth', durableName(owner, 'auth')]]), logger);
  const consumer = new SourceConsumer({
    owner,
    source: 'auth',
    handlers,
    readModels: [],
    database: counted,
    bus,
    logger,
    progress: withProgress ? progress : undefined,
    tickMs: 3_600_000, // ticks only when the test calls them
  });
  await consumer.start();
  await consumer.tick(); // the first-start resync at the owner's position 0
  cleanups.push(() => consumer.stop());
  const base = transactions;
  return { consumer, deliver: (batch) => bus.handler!(batch), transactions: () => transactions - base, progress };
}

interface Cursor {
  watermark: number;
  applied: number[];
  gapSince: string | null;
}

async function cursorOf(database: Database, owner: string): Promise<Cursor> {
  const [row] = await queryRows<{ watermark: string; applied: string[] | string; gap_since: string | null }>(
    database.db,
    'select watermark, applied, gap_since from event_cursors where consumer = $1 and source = $2',
    [durableName(owner, 'auth'), 'auth'],
  );
  const applied = typeof row!.applied === 'string' ? row!.applied.replace(/[{}]/g, '').split(',') : row!.applied;
  return { watermark: Number(row!.watermark), applied: applied.filter(Boolean).map(Number), gapSince: row!.gap_since };
}

const view = (c: Cursor) => ({ watermark: c.watermark, applied: c.applied, gap: c.gapSince !== null });

async function effects(database: Database, consumer: string): Promise<number[]> {
  const rows = await queryRows<{ position: string }>(
    database.db,
    'select position from effects where consumer = $1 order by position',
    [consumer],
  );
  return rows.map((r) => Number(r.position));
}

describe('consumer fast path for events without a handler', () => {
  it('leaves the cursor exactly as the transaction path does', async () => {
    const { database } = await makeDatabase();
    // Same events, same order: `inventory` has no handler for them, `pki-enrollment` has one.
    const fast = await startConsumer(database, 'inventory', []);
    const slow = await startConsumer(database, 'pki-enrollment', [effectHandler(unhandled.type, 'pki-enrollment')]);
    const steps: { batch: number[]; rebuildingUpTo?: number }[] = [
      { batch: [3] },
      { batch: [1] },
      { batch: [1] }, // a redelivery: nothing moves, the gap keeps its start
      { batch: [2, 5, 5] },
      { batch: [7, 6] },
      { batch: [4] },
      { batch: [9, 8, 2] },
      { batch: [10] },
      { batch: [11, 13, 12, 15], rebuildingUpTo: 12 }, // 11 and 12 are left to a rebuild
      { batch: [16, 14] },
    ];
    const before = { fast: await cursorOf(database, 'inventory'), slow: await cursorOf(database, 'pki-enrollment') };
    for (const step of steps) {
      if (step.rebuildingUpTo !== undefined)
        await queryRows(database.db, 'update event_cursors set resync_position = $1', [step.rebuildingUpTo]);
      await fast.deliver(step.batch.map((p) => delivery(p)));
      await slow.deliver(step.batch.map((p) => delivery(p)));
      const after = { fast: await cursorOf(database, 'inventory'), slow: await cursorOf(database, 'pki-enrollment') };
      expect({ step: step.batch, ...view(after.fast), gapMoved: after.fast.gapSince !== before.fast.gapSince }).toEqual(
        { step: step.batch, ...view(after.slow), gapMoved: after.slow.gapSince !== before.slow.gapSince },
      );
      // Each consumer reports its own watermark as it saved it.
      expect(fast.progress.watermark('auth')).toBe(after.fast.watermark);
      expect(slow.progress.watermark('auth')).toBe(after.slow.watermark);
      Object.assign(before, after);
    }
    expect(view(before.fast)).toEqual({ watermark: 10, applied: [13, 14, 15, 16], gap: true });
    expect(fast.transactions()).toBe(0);
    expect(slow.transactions()).toBe(steps.length);
    expect(await effects(database, 'pki-enrollment')).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 14, 15, 16]);
  });

  it('restarts the gap when the watermark moves, also across a power of ten (numbers, not text)', async () => {
    const { database } = await makeDatabase();
    const fast = await startConsumer(database, 'inventory', []);
    const slow = await startConsumer(database, 'pki-enrollment', [effectHandler(unhandled.type, 'pki-enrollment')]);
    for (const c of [fast, slow]) {
      await c.deliver([1, 2, 3, 4, 5, 6, 7, 8].map((p) => delivery(p)));
      await c.deliver([delivery(12)]);
    }
    const gapped = { fast: await cursorOf(database, 'inventory'), slow: await cursorOf(database, 'pki-enrollment') };
    expect(view(gapped.slow)).toEqual({ watermark: 8, applied: [12], gap: true });
    // 8 → 10 with 12 still above: the gap starts again (it compared '10' > '8' as text before).
    for (const c of [fast, slow]) await c.deliver([delivery(9), delivery(10)]);
    const moved = { fast: await cursorOf(database, 'inventory'), slow: await cursorOf(database, 'pki-enrollment') };
    for (const k of ['fast', 'slow'] as const) {
      expect(view(moved[k])).toEqual({ watermark: 10, applied: [12], gap: true });
      expect(moved[k].gapSince, k).not.toBe(gapped[k].gapSince);
    }
  });

  it.each(['postgres', 'pglite'] as const)(
    'applies out-of-order and duplicate positions and closes a gap (%s)',
    async (kind) => {
      const { database } = await makeDatabase(kind);
      const fast = await startConsumer(database, 'inventory', []);
      const cursor = async () => view(await cursorOf(database, 'inventory'));
      await fast.deliver([delivery(3)]);
      expect(await cursor()).toEqual({ watermark: 0, applied: [3], gap: true });
      await fast.deliver([delivery(1)]);
      expect(await cursor()).toEqual({ watermark: 1, applied: [3], gap: true });
      await fast.deliver([delivery(2)]);
      expect(await cursor()).toEqual({ watermark: 3, applied: [], gap: false });
      await fast.deliver([delivery(2), delivery(3), delivery(1)]);
      expect(await cursor()).toEqual({ watermark: 3, applied: [], gap: false });

      // A gap: 4, 5 and 7 arrive (7 twice), 6 is missing; the gap's start stays while nothing moves.
      await fast.deliver([delivery(4), delivery(7), delivery(5), delivery(7)]);
      const gapped = await cursorOf(database, 'inventory');
      expect(view(gapped)).toEqual({ watermark: 5, applied: [7], gap: true });
      await fast.deliver([delivery(7)]);
      expect((await cursorOf(database, 'inventory')).gapSince).toBe(gapped.gapSince);
      await fast.deliver([delivery(6)]);
      expect(await cursor()).toEqual({ watermark: 7, applied: [], gap: false });

      // Positions at or below a rebuild's position are left to it: never added to `applied`.
      await queryRows(database.db, 'update event_cursors set resync_position = 10 where consumer = $1', [
        fast.consumer.durable,
      ]);
      await fast.deliver([delivery(9), delivery(12), delivery(10)]);
      expect(await cursor()).toEqual({ watermark: 7, applied: [12], gap: true });
      await queryRows(
        database.db,
        'update event_cursors set resync_position = null, watermark = 10 where consumer = $1',
        [fast.consumer.durable],
      );
      await fast.deliver([delivery(11)]);
      expect(await cursor()).toEqual({ watermark: 12, applied: [], gap: false });
      expect(fast.progress.watermark('auth')).toBe(12);
      expect(fast.transactions()).toBe(0);
    },
  );

  it('runs a mixed batch, an unknown type and another source through the transaction path', async () => {
    const { database } = await makeDatabase();
    const consumer = await startConsumer(database, 'inventory', [effectHandler(handled.type, 'inventory')]);
    await consumer.deliver([delivery(2), delivery(1, handled), delivery(3)]);
    expect(view(await cursorOf(database, 'inventory'))).toEqual({ watermark: 3, applied: [], gap: false });
    expect(await effects(database, 'inventory')).toEqual([1]);
    expect(consumer.transactions()).toBe(1);
    // Redelivered, the handled event is not handled again.
    await consumer.deliver([delivery(1, handled), delivery(2)]);
    expect(await effects(database, 'inventory')).toEqual([1]);
    expect(consumer.transactions()).toBe(2);
    // Nothing handled: the fast path.
    await consumer.deliver([delivery(5), delivery(4)]);
    expect(view(await cursorOf(database, 'inventory'))).toEqual({ watermark: 5, applied: [], gap: false });
    expect(consumer.transactions()).toBe(2);

    // A type this build does not know is parked, in a transaction.
    await consumer.deliver([delivery(6), delivery(7, { type: 'apiSession.teleported', version: 1 })]);
    expect(consumer.transactions()).toBe(3);
    expect(view(await cursorOf(database, 'inventory'))).toEqual({ watermark: 7, applied: [], gap: false });
    const parked = await queryRows<{ position: string }>(database.db, 'select position from parked_events');
    expect(parked.map((p) => Number(p.position))).toEqual([7]);

    // An event numbered by another source never moves this cursor.
    await consumer.deliver([delivery(8, unhandled, 'inventory')]);
    expect(consumer.transactions()).toBe(4);
    expect(view(await cursorOf(database, 'inventory'))).toEqual({ watermark: 7, applied: [], gap: false });
  });

  it('stays exact under concurrent fast and transaction batches of several replicas', async () => {
    const { url, database } = await makeDatabase();
    const n = 400;
    const replicas: Started[] = [];
    for (let i = 0; i < 4; i++) {
      // Each replica with its own pool, as separate processes have.
      const own = await openDatabase({ url, poolSize: 8 });
      cleanups.push(() => own.close());
      replicas.push(await startConsumer(own, 'inventory', [effectHandler(handled.type, 'inventory')]));
    }
    const isHandled = (p: number) => p % 5 === 0;
    const deliveryOf = (p: number) => delivery(p, isHandled(p) ? handled : unhandled);
    // Shuffled positions in batches of 1 to 4, a fifth of them delivered twice (redeliveries).
    const positions = shuffle(Array.from({ length: n }, (_, i) => i + 1));
    const batches: number[][] = [];
    for (let i = 0; i < positions.length;) {
      const size = 1 + Math.floor(Math.random() * 4);
      batches.push(positions.slice(i, i + size));
      i += size;
    }
    const all = shuffle([...batches, ...batches.filter((_, i) => i % 5 === 0)]);
    let next = 0;
    await Promise.all(
      replicas.flatMap((replica) =>
        // Several batches in flight per replica: more contention than the bus gives.
        Array.from({ length: 3 }, async () => {
          while (next < all.length) await replica.deliver(all[next++]!.map(deliveryOf));
        }),
      ),
    );
    expect(view(await cursorOf(database, 'inventory'))).toEqual({ watermark: n, applied: [], gap: false });
    const expected = Array.from({ length: n }, (_, i) => i + 1).filter(isHandled);
    expect(await effects(database, 'inventory')).toEqual(expected);
    // Both paths ran.
    const transactions = replicas.reduce((sum, r) => sum + r.transactions(), 0);
    expect(transactions).toBeGreaterThan(0);
    expect(transactions).toBeLessThan(all.length);
  });

  it('announces a new watermark to other replicas, and only a new one', async () => {
    const { url, database } = await makeDatabase();
    // Without progress of its own (a consumer need not report to anyone to save its cursor).
    const fast = await startConsumer(database, 'inventory', [], { withProgress: false });
    const durable = fast.consumer.durable;
    // Another replica: its own connection, learning watermarks from the NOTIFY alone.
    const other = await openDatabase({ url });
    cleanups.push(() => other.close());
    const progress = new ConsumerProgress(other, new Map([['auth', durable]]), logger);
    await progress.start();
    cleanups.push(() => progress.stop());
    const payloads: string[] = [];
    const unlisten = await other.listen(cursorChannel, (payload) => payloads.push(payload));
    cleanups.push(unlisten);
    expect(progress.watermark('auth')).toBe(0);

    await fast.deliver([delivery(2), delivery(1)]);
    await waitFor(() => progress.watermark('auth') === 2, 'watermark 2 announced', 10_000, 10);
    // No new watermark, no NOTIFY: a NOTIFY for it would come before the next one.
    await fast.deliver([delivery(4)]);
    await fast.deliver([delivery(2)]);
    await fast.deliver([delivery(3)]);
    await waitFor(() => progress.watermark('auth') === 4, 'watermark 4 announced', 10_000, 10);
    await waitFor(() => payloads.length >= 2, 'both notifications', 10_000, 10);
    expect(payloads).toEqual([`${durable}|auth|2`, `${durable}|auth|4`]);
    expect(view(await cursorOf(database, 'inventory'))).toEqual({ watermark: 4, applied: [], gap: false });
    expect(fast.transactions()).toBe(0);
  });

  it('announces a new watermark from the transaction path too, in the cursor update, and only a new one', async () => {
    const { url, database } = await makeDatabase();
    const applying = await startConsumer(database, 'policy', [effectHandler(handled.type, 'policy')], {
      withProgress: false,
    });
    const durable = applying.consumer.durable;
    const other = await openDatabase({ url });
    cleanups.push(() => other.close());
    const payloads: string[] = [];
    cleanups.push(await other.listen(cursorChannel, (payload) => payloads.push(payload)));

    await applying.deliver([delivery(2, handled), delivery(1, handled)]);
    // A gap (3 missing): the watermark stays, so nothing is announced; 3 then moves it to 4.
    await applying.deliver([delivery(4, handled)]);
    await applying.deliver([delivery(3, handled)]);
    await waitFor(() => payloads.length >= 2, 'both notifications', 10_000, 10);
    expect(payloads).toEqual([`${durable}|auth|2`, `${durable}|auth|4`]);
    expect(await effects(database, 'policy')).toEqual([1, 2, 3, 4]);
    expect(applying.transactions()).toBe(3);
  });
});
