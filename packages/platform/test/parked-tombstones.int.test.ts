import { eventTypes } from '@ziti/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import { PgEntityReadModel } from '../../../services/policy/src/read-models/entity-read-model.store.ts';
import {
  type Database,
  type Db,
  type EventDelivery,
  type EventHandler,
  type RebuildableReadModel,
  SourceConsumer,
  createLogger,
  migrate,
  openDatabase,
  queryRows,
} from '../src/index.ts';
import { BatchBus } from './support/batch-bus.ts';

/**
 * Regression (found in review): a parked event is replayed by `retryParked` on every start, whatever its age, while the
 * tombstone that guarded its entity is pruned one hour after the deletion. A create parked
 * because its handler failed five times (a transient error) and replayed at the next restart,
 * days later, finds no row and no tombstone: the deleted entity comes back in the read model.
 */
const logger = createLogger('test', 'silent');

const delivery = (position: number, def: { type: string; version: number }, attempt = 1): EventDelivery => ({
  attempt,
  event: {
    id: `auth:${position}`,
    type: def.type,
    version: def.version,
    source: 'auth',
    sequence: position,
    occurredAt: new Date().toISOString(),
    data: { id: 'identity-1', name: 'x' },
  },
});

let db: Database | undefined;
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
  await db?.close();
});

describe('regression: parked events and pruned tombstones', () => {
  it('a replayed parked create does not resurrect an entity deleted after it', async () => {
    db = await openDatabase({ pgliteMemory: true });
    await migrate(db, [
      {
        version: '0001_things',
        sql: `create table things (id text primary key, name text not null, state jsonb not null, source_sequence bigint not null,
                deleted boolean not null default false, updated_at timestamptz not null default now());`,
      },
    ]);
    const model = (tx: Db) =>
      new PgEntityReadModel<{ id: string; name: string }>(tx, {
        table: 'things',
        columns: [{ name: 'name', value: (s) => s.name }],
      });
    let failing = true;
    const handlers: EventHandler[] = [eventTypes.identityCreated, eventTypes.identityDeleted].map((def) => ({
      type: def.type,
      handle: async (tx, event) => {
        if (failing && def === eventTypes.identityCreated) throw new Error('connection reset');
        await model(tx).apply(
          event.data as { id: string; name: string },
          event.sequence,
          def === eventTypes.identityDeleted,
        );
      },
    }));
    const readModel: RebuildableReadModel = {
      entity: 'identity',
      applyPage: async () => undefined,
      prune: (tx, watermark) => model(tx).pruneTombstones(watermark),
    };
    const make = (bus: BatchBus) =>
      new SourceConsumer({
        owner: 'policy',
        source: 'auth',
        handlers,
        readModels: [readModel],
        database: db!,
        bus,
        logger,
        tickMs: 3_600_000,
      });

    const bus1 = new BatchBus();
    const first = make(bus1);
    await first.start();
    stops.push(() => first.stop());
    await first.tick();
    // identity.created at 1 fails on its 5th delivery: parked (counts as applied).
    await bus1.handler!([delivery(1, eventTypes.identityCreated, 5)]);
    // identity.deleted at 2: a tombstone.
    await bus1.handler!([delivery(2, eventTypes.identityDeleted)]);
    expect(await queryRows(db.db, 'select id, deleted from things')).toEqual([{ id: 'identity-1', deleted: true }]);
    // Hours later the tombstone is old enough to prune (at or below the watermark, 2)…
    await queryRows(db.db, "update things set updated_at = now() - interval '2 hours'");
    // The consumer's maintenance prunes only below the oldest parked position: the tombstone stays.
    const pruner = make(new BatchBus());
    await pruner.start();
    await pruner.tick();
    await pruner.stop();
    expect(await queryRows(db.db, 'select id, deleted from things')).toEqual([{ id: 'identity-1', deleted: true }]);

    // Any later restart (the failure was transient) replays the parked create.
    failing = false;
    await first.stop();
    const bus2 = new BatchBus();
    const second = make(bus2);
    await second.start();
    stops.push(() => second.stop());

    const live = await queryRows(db.db, 'select id from things where not deleted');
    // Was: identity-1, deleted at position 2, is live again from its create at position 1.
    expect(live).toEqual([]);
  });
});
