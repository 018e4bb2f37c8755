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
import { BatchBus, identityDeletedDelivery } from './support/batch-bus.ts';

/**
 * Regression (found in review): `gap_since` is "since when `applied` has been non-empty", not "since when the oldest
 * missing position has been missing". While positions keep arriving out of order, it is never
 * reset, so a position that went missing a moment ago is treated as a gap that outlived the
 * stream. The resync then moves the watermark past it — and for a subscription without read
 * models (auth→pki-enrollment, auth→inventory, inventory→auth, pki→auth: all of them side-effect
 * handlers) nothing rebuilds what the skipped event would have done: the event is lost.
 */
const logger = createLogger('test', 'silent');
const type = eventTypes.identityDeleted.type;

const delivery = identityDeletedDelivery;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let db: Database | undefined;
let consumer: SourceConsumer | undefined;
afterEach(async () => {
  await consumer?.stop();
  await db?.close();
});

describe('regression: gap resync', () => {
  it('does not skip a position that has been missing for less than gapResyncMs', async () => {
    db = await openDatabase({ pgliteMemory: true });
    await migrate(db, [{ version: '0001_effects', sql: 'create table effects (position bigint not null);' }]);
    const bus = new BatchBus();
    const gapResyncMs = 400;
    consumer = new SourceConsumer({
      owner: 'pki-enrollment',
      source: 'auth',
      // A handler with a side effect only (like pki-enrollment's identity.deleted): no read models.
      handlers: [
        {
          type,
          handle: async (tx, event) => {
            await queryRows(tx, 'insert into effects (position) values ($1)', [event.sequence]);
          },
        },
      ],
      readModels: [],
      database: db,
      bus,
      logger,
      gapResyncMs,
      tickMs: 3_600_000, // ticks only when the test calls them
    });
    await consumer.start();
    await consumer.tick(); // first-start resync at owner position 0
    const cursor = async () =>
      (
        await queryRows<{ watermark: string; resync_required: boolean }>(
          db!.db,
          'select watermark, resync_required from event_cursors where consumer = $1',
          [durableName('pki-enrollment', 'auth')],
        )
      )[0]!;
    expect((await cursor()).resync_required).toBe(false);

    // Out-of-order deliveries, as two replicas or a retried event produce them.
    await bus.handler!([delivery(2)]); // 1 missing
    await sleep(gapResyncMs - 100);
    await bus.handler!([delivery(1), delivery(4)]); // 1 arrives; now 3 is missing — since just now
    const missingSince = Date.now();
    bus.ownerPosition = 10; // the owner has committed up to 10; 3, 5..10 are on their way
    await sleep(150);
    await consumer.tick();
    const missingFor = Date.now() - missingSince;
    expect(missingFor).toBeLessThan(gapResyncMs);

    // Position 3 arrives (e.g. the nak back-off of 500 ms ended, or the other replica committed).
    await bus.handler!([delivery(3)]);
    const effects = (await queryRows<{ position: string }>(db.db, 'select position from effects order by 1')).map((r) =>
      Number(r.position),
    );
    // Was: 3 was skipped — the watermark was moved to 10 by a "gap" resync although position 3
    // had been missing for ~150 ms, and a subscription without read models rebuilds nothing.
    expect({ watermark: Number((await cursor()).watermark), effects }).toEqual({
      watermark: 4,
      effects: [1, 2, 3, 4],
    });
  });
});
