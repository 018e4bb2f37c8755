import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, waitFor } from '../../../test/support/infra.ts';
import { type Database, migrate, openDatabase, queryRows, writeOutbox } from '../src/index.ts';

/**
 * Outbox rows carry two numbers: `position` (what the relay publishes and consumers apply,
 * docs/adr/0008) and `id` (a bigserial). `writeOutbox` draws a row's id in the statement that
 * takes the position lock, after taking it: a writer waiting for the lock has drawn nothing yet,
 * so ids follow positions, and tests that list the outbox by id see the positions' order.
 */
let database: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  const db = await createTestDatabase('outboxids');
  drop = db.drop;
  database = await openDatabase({ url: db.url });
  await migrate(database, []);
});

afterAll(async () => {
  await database?.close();
  await drop?.();
});

const event = (n: number) => ({ type: 'identity.updated', version: 1, data: { n } });

async function lockWaiters(): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    database.db,
    "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
  );
  return row!.n;
}

it('a writer waiting for the position lock draws no outbox id until it has its positions', async () => {
  let release!: () => void;
  let wrote!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const written = new Promise<void>((r) => (wrote = r));
  // The first writer has written its events and holds the position lock until it commits.
  const first = database.transaction(async (tx) => {
    await writeOutbox(tx, 'auth', [event(1), event(2)]);
    wrote();
    await gate;
  });
  await written;
  const [drawn] = await queryRows<{ last: string }>(database.db, 'select last_value as last from outbox_id_seq');
  // The second writes while the first holds the lock: its statement waits.
  const second = database.transaction((tx) => writeOutbox(tx, 'auth', [event(3)]));
  try {
    await waitFor(async () => (await lockWaiters()) === 1, 'the second writer waiting for the position lock');
    const [waiting] = await queryRows<{ last: string }>(database.db, 'select last_value as last from outbox_id_seq');
    expect(waiting!.last).toBe(drawn!.last);
  } finally {
    release();
    await Promise.allSettled([first, second]);
  }
  await Promise.all([first, second]);
  const rows = await queryRows<{ id: string; position: string; n: number }>(
    database.db,
    "select o.id::text as id, o.position::text as position, (o.payload->>'n')::int as n from outbox o order by o.id",
  );
  expect(rows.map((r) => r.n)).toEqual([1, 2, 3]);
  expect(rows.map((r) => Number(r.position))).toEqual([1, 2, 3]);
});

it('under concurrent writers, outbox ids and positions never disagree', async () => {
  const writer = async (w: number) => {
    for (let i = 0; i < 40; i++) {
      await database.transaction((tx) =>
        writeOutbox(
          tx,
          'auth',
          Array.from({ length: 1 + ((w + i) % 3) }, (_, k) => event(k)),
        ),
      );
    }
  };
  await Promise.all([0, 1, 2, 3, 4, 5].map(writer));
  const [row] = await queryRows<{ inversions: number; rows: number }>(
    database.db,
    `select (select count(*)::int from outbox a join outbox b on a.id < b.id and a.position > b.position) as inversions,
            (select count(*)::int from outbox) as rows`,
  );
  expect(row!.rows).toBeGreaterThan(240);
  expect(row!.inversions).toBe(0);
});
