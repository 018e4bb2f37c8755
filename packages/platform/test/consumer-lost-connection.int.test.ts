import { eventTypes } from '@ziti/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Database,
  SourceConsumer,
  createLogger,
  durableName,
  migrate,
  openDatabase,
  queryRows,
} from '../src/index.ts';
import { createTestDatabase } from '../../../test/support/infra.ts';
import { BatchBus, identityDeletedDelivery } from './support/batch-bus.ts';

/**
 * Issue 35 item 3: a consumer whose Postgres connection is cut under a batch (failover,
 * `pg_terminate_backend`) applies the batch again at once on a fresh connection, so the cut costs
 * milliseconds instead of the bus's redelivery delay (500 ms and more per attempt, which put the
 * read models seconds behind their owners under repeated cuts) — and a database that was away
 * never parks an event.
 */
const logger = createLogger('test', 'silent');
const type = eventTypes.identityDeleted.type;

const delivery = identityDeletedDelivery;

let db: Database | undefined;
let consumer: SourceConsumer | undefined;
afterEach(async () => {
  await consumer?.stop();
  await db?.close();
});

async function start(cutsLeft: { n: number }) {
  const made = await createTestDatabase('lostconn');
  db = await openDatabase({ url: made.url, poolSize: 3 });
  await migrate(db, [{ version: '0001_effects', sql: 'create table effects (position bigint not null);' }]);
  const bus = new BatchBus();
  consumer = new SourceConsumer({
    owner: 'pki-enrollment',
    source: 'auth',
    handlers: [
      {
        type,
        handle: async (tx, event) => {
          // The backend running this transaction is terminated, as an operator's or a failover's cut does.
          if (cutsLeft.n-- > 0) await queryRows(tx, 'select pg_terminate_backend(pg_backend_pid())');
          await queryRows(tx, 'insert into effects (position) values ($1)', [event.sequence]);
        },
      },
    ],
    readModels: [],
    database: db,
    bus,
    logger,
    tickMs: 3_600_000,
  });
  await consumer.start();
  await consumer.tick();
  const state = async () => ({
    effects: (await queryRows<{ position: string }>(db!.db, 'select position from effects order by 1')).map((r) =>
      Number(r.position),
    ),
    parked: Number((await queryRows<{ n: string }>(db!.db, 'select count(*)::int as n from parked_events'))[0]?.n ?? 0),
    watermark: Number(
      (
        await queryRows<{ watermark: string }>(db!.db, 'select watermark from event_cursors where consumer = $1', [
          durableName('pki-enrollment', 'auth'),
        ])
      )[0]!.watermark,
    ),
  });
  return { bus, state };
}

describe('a consumer whose connection is cut under a batch', () => {
  it('applies the batch on a fresh connection at once, exactly once', async () => {
    const { bus, state } = await start({ n: 2 });
    const started = Date.now();
    // Was: the batch failed, went one by one, and each event came back only after the bus's delay.
    await bus.handler!([delivery(1), delivery(2), delivery(3)]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await state()).toEqual({ effects: [1, 2, 3], watermark: 3, parked: 0 });
  });

  it('leaves the batch to the bus when the database stays away, and never parks it for that', async () => {
    const { bus, state } = await start({ n: 1_000 });
    // The last attempt the consumer allows: a failure of the event's own would park it now.
    await expect(bus.handler!([delivery(1, 5)])).rejects.toThrow();
    expect(await state()).toEqual({ effects: [], watermark: 0, parked: 0 });
  });
});
