import { ApiError, eventTypes } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTestDatabase, infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import {
  type Bus,
  type Database,
  type EventEnvelope,
  InProcessBus,
  NatsBus,
  NoRespondersError,
  OutboxRelay,
  createLogger,
  createUnitOfWork,
  migrate,
  openDatabase,
  queryRows,
  SourceConsumer,
} from '../src/index.ts';

/** A test row travels as `identity.created`, with its own shape. */
const rowCreated = { ...eventTypes.identityCreated, schema: z.looseObject({ id: z.string() }) };

const logger = createLogger('test', 'silent');

type Setup = { bus: Bus; producer: Database; consumer: Database; cleanup: () => Promise<void> };

const setups: Record<string, () => Promise<Setup>> = {
  'NATS + Postgres': async () => {
    const a = await createTestDatabase('plat');
    const b = await createTestDatabase('plat');
    const bus = await NatsBus.connect({ url: infra.natsUrl, name: 'test', namespace: uniqueName('t'), logger });
    const producer = await openDatabase({ url: a.url });
    const consumer = await openDatabase({ url: b.url });
    return {
      bus,
      producer,
      consumer,
      cleanup: async () => {
        await bus.close();
        await producer.close();
        await consumer.close();
        await a.drop();
        await b.drop();
      },
    };
  },
  'in-process + PGlite': async () => {
    const producer = await openDatabase({ pgliteMemory: true });
    const consumer = await openDatabase({ pgliteMemory: true });
    const bus = new InProcessBus();
    return {
      bus,
      producer,
      consumer,
      cleanup: async () => {
        await bus.close();
        await producer.close();
        await consumer.close();
      },
    };
  },
};

for (const [name, make] of Object.entries(setups)) {
  describe(`platform on ${name}`, () => {
    let s: Setup;
    beforeAll(async () => {
      s = await make();
      const table = [{ version: '0001_things', sql: 'create table things (id text primary key, name text not null);' }];
      await migrate(s.producer, table);
      await migrate(s.consumer, [{ version: '0001_seen', sql: 'create table seen (id text primary key, name text);' }]);
    });
    afterAll(async () => s?.cleanup());

    it('applies migrations once and refuses an edited one', async () => {
      const again = await migrate(s.producer, [
        { version: '0001_things', sql: 'create table things (id text primary key, name text not null);' },
      ]);
      expect(again).toEqual([]);
      await expect(migrate(s.producer, [{ version: '0001_things', sql: 'select 1;' }])).rejects.toThrow(/changed/);
    });

    it('answers requests through a queue group and carries API error codes', async () => {
      const served = s.bus.serve('ziti.rpc.test.call.>', 'q', async (payload, subject) => {
        const p = payload as { n: number };
        if (p.n < 0) throw new ApiError('NOT_FOUND', 'thing with id x not found');
        return { doubled: p.n * 2, subject };
      });
      await expect(s.bus.request('ziti.rpc.test.call.double', { n: 21 })).resolves.toEqual({
        doubled: 42,
        subject: 'ziti.rpc.test.call.double',
      });
      const err = await s.bus.request('ziti.rpc.test.call.double', { n: -1 }).catch((e) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe('NOT_FOUND');
      await served.drain();
      await expect(s.bus.request('ziti.rpc.test.call.double', { n: 1 }, { timeoutMs: 2000 })).rejects.toBeInstanceOf(
        NoRespondersError,
      );
    });

    it('publishMany stores a batch in its order, once: each consumer gets it in order, a repeat is dropped', async () => {
      const got: { id: string; sequence: number }[] = [];
      const consumer = await s.bus.consume({
        durable: uniqueName('many'),
        subject: 'ziti.evt.test.many.>',
        handler: async (batch) => {
          for (const d of batch) got.push({ id: d.event.id, sequence: d.event.sequence });
        },
      });
      const source = uniqueName('src');
      const batch = Array.from({ length: 150 }, (_, i) => ({
        subject: i % 3 === 0 ? 'ziti.evt.test.many.a' : 'ziti.evt.test.many.b',
        event: {
          id: `${source}:${i + 1}`,
          type: i % 3 === 0 ? 'test.a' : 'test.b',
          version: 1,
          source: 'test',
          sequence: i + 1,
          occurredAt: new Date().toISOString(),
          data: { id: `x${i}` },
        } satisfies EventEnvelope,
      }));
      expect(s.bus.publishMany).toBeDefined();
      await s.bus.publishMany!(batch);
      // The outbox publishing a batch again after a crash before marking it: nothing is stored twice.
      await s.bus.publishMany!(batch.slice(0, 50));
      await waitFor(async () => got.length >= 150, 'the batch');
      // A duplicate stored late would arrive before this marker.
      await s.bus.publish('ziti.evt.test.many.b', { ...batch[0]!.event, id: `${source}:end`, sequence: 151 });
      await waitFor(async () => got.some((g) => g.id === `${source}:end`), 'the marker');
      expect(got.map((g) => g.sequence)).toEqual([...Array.from({ length: 150 }, (_, i) => i + 1), 151]);
      await consumer.stop();
    });

    it('publishes committed events only, once per durable consumer', async () => {
      const received: EventEnvelope[] = [];
      const consumer = new SourceConsumer({
        owner: 'policy',
        source: 'auth',
        handlers: [
          {
            type: 'identity.created',
            handle: async (tx, event) => {
              received.push(event);
              const data = event.data as { id: string; name: string };
              await queryRows(
                tx,
                'insert into seen (id, name) values ($1, $2) on conflict (id) do update set name = $2',
                [data.id, data.name],
              );
            },
          },
        ],
        readModels: [],
        database: s.consumer,
        bus: s.bus,
        logger,
      });
      await queryRows(
        s.consumer.db,
        "insert into event_cursors (consumer, source, resync_required) values ('policy-from-auth', 'auth', false)",
      );
      await consumer.start();
      const relay = new OutboxRelay(s.producer, s.bus, 'auth', logger, 100);
      const work = createUnitOfWork(s.producer, relay, 'auth', (tx, events) => ({ tx, events }));
      const id = uniqueName('thing');
      await work(async ({ tx, events }) => {
        await queryRows(tx, 'insert into things (id, name) values ($1, $2)', [id, 'one']);
        await events.emit(rowCreated, { id, name: 'one' });
      });
      await expect(
        work(async ({ tx, events }) => {
          await events.emit(rowCreated, { id: 'rolled-back', name: 'never' });
          await queryRows(tx, 'insert into things (id, name) values ($1, $2)', [id, 'duplicate key fails']);
        }),
      ).rejects.toThrow();
      await relay.start();
      await waitFor(
        async () => (await queryRows(s.consumer.db, 'select * from seen where id = $1', [id])).length === 1,
        'event',
      );
      // Re-deliver the same event: the consumer must not apply it twice.
      await s.bus.publish('ziti.evt.auth.identity.created', { ...received[0]!, id: 'auth:1-again' });
      await relay.flushAll();
      await waitFor(
        async () =>
          Number(
            (await queryRows<{ watermark: string }>(s.consumer.db, 'select watermark from event_cursors'))[0]
              ?.watermark,
          ) === 1,
        'watermark',
      );
      expect(received.map((e) => e.data)).toEqual([{ id, name: 'one' }]);
      expect(received[0]).toMatchObject({ type: 'identity.created', source: 'auth', version: 1, sequence: 1 });
      expect(await queryRows(s.consumer.db, "select * from seen where id = 'rolled-back'")).toEqual([]);
      await relay.stop();
      await consumer.stop();
    });
  });
}
