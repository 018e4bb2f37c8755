/**
 * `npm run bench -- emit`: what numbering events in commit order costs (docs/adr/0008).
 * The same write — one row and one event per transaction, 16 writers on one service database —
 * through the unit of work (positions under the `event_position` row lock, held to the commit)
 * beside the floor: the same transaction inserting its outbox row with a sequence number and no
 * shared lock (the previous design). Loopback Postgres only; bounded by `EMIT_TRANSACTIONS`.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { z } from 'zod';
import { eventTypes } from '../packages/contracts/src/index.ts';
import { createLogger, createUnitOfWork, migrate, openDatabase, queryRows } from '../packages/platform/src/index.ts';

/** A test row travels as `identity.created`, with its own shape. */
const rowCreated = { ...eventTypes.identityCreated, schema: z.looseObject({ id: z.string() }) };

export async function benchEmitCost() {
  const total = Number(process.env.EMIT_TRANSACTIONS ?? 4000);
  const writers = Number(process.env.EMIT_WRITERS ?? 16);
  const adminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `emit_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ url: url.toString(), poolSize: writers });
  createLogger('bench', 'silent');
  try {
    await migrate(database, [
      {
        version: '0001_rows',
        sql: 'create table rows (id text primary key, n int not null); create sequence floor_seq;',
      },
    ]);
    const work = createUnitOfWork(database, undefined, 'auth', (tx, events) => ({ tx, events }));
    const run = async (label: string, one: (id: string, n: number) => Promise<void>) => {
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: writers }, async () => {
          while (next < total) {
            const n = next++;
            await one(`${label}-${n}`, n);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      return Math.round(total / seconds);
    };
    const floor = await run('floor', (id, n) =>
      database.transaction(async (tx) => {
        await queryRows(tx, 'insert into rows (id, n) values ($1, $2)', [id, n]);
        await queryRows(
          tx,
          `insert into outbox (position, subject, type, version, payload)
           values (nextval('floor_seq') + 1000000000, 'ziti.evt.auth.identity.created', 'identity.created', 1, $1::jsonb)`,
          [JSON.stringify({ id, n })],
        );
      }),
    );
    const positioned = await run('positioned', (id, n) =>
      work(async ({ tx, events }) => {
        await queryRows(tx, 'insert into rows (id, n) values ($1, $2)', [id, n]);
        await events.emit(rowCreated, { id, n });
      }),
    );
    console.log(`${writers} writers, ${total} transactions each way`);
    console.log(`floor (outbox row, no shared lock):      ${floor} tx/s`);
    console.log(
      `positions in commit order (unit of work): ${positioned} tx/s  (${((positioned / floor) * 100).toFixed(0)} % of the floor)`,
    );
    return {
      writers,
      transactions: total,
      floorTxPerSecond: floor,
      positionedTxPerSecond: positioned,
      ratio: +(positioned / floor).toFixed(3),
    };
  } finally {
    await database.close();
    await admin.query(`drop database "${name}" with (force)`);
    await admin.end();
  }
}
