import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, queryRows } from '../src/index.ts';
import { createTestDatabase } from '../../../test/support/infra.ts';

/**
 * `queryRows(…, { prepare: true })`: a named prepared statement on Postgres (parsed once per
 * connection, its name a function of its text), the same rows and value types as an unnamed one;
 * PGlite (`npm start`) runs it as usual.
 */
describe('queryRows with prepare', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  const text = `select $1::text as a, $2::int as b, now() as at, '{"k":1}'::jsonb as j, $1::text || '!' as again`;

  it('on Postgres: prepared once per connection, answers like an unnamed statement', async () => {
    const target = await createTestDatabase('prep');
    const database = await openDatabase({ url: target.url, poolSize: 1 });
    cleanups.push(target.drop, () => database.close());
    const plain = await queryRows(database.db, text, ['x', 2]);
    const first = await queryRows(database.db, text, ['x', 2], { prepare: true });
    const second = await queryRows(database.db, text, ['y', 3], { prepare: true });
    expect(first).toEqual([{ ...plain[0], at: expect.any(String) }]);
    expect(typeof plain[0]!.at).toBe('string');
    expect(second).toMatchObject([{ a: 'y', b: 3, j: { k: 1 }, again: 'y!' }]);
    const prepared = await queryRows<{ name: string }>(
      database.db,
      `select name from pg_prepared_statements where name like 'zq\\_%'`,
    );
    expect(prepared).toHaveLength(1);
    // Inside a transaction, on its connection.
    const inTx = await database.transaction((tx) => queryRows(tx, text, ['z', 4], { prepare: true }));
    expect(inTx).toMatchObject([{ a: 'z', b: 4 }]);
  });

  it('on PGlite: the option is ignored', async () => {
    const database = await openDatabase({ pgliteMemory: true });
    cleanups.push(() => database.close());
    const rows = await queryRows(database.db, text, ['x', 2], { prepare: true });
    expect(rows).toMatchObject([{ a: 'x', b: 2, j: { k: 1 }, again: 'x!' }]);
    expect(typeof rows[0]!.at).toBe('string');
  });
});
