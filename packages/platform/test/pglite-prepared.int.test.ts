import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePreparedStatements } from '../src/db/pglite-prepared.ts';

/**
 * PGlite's repeated statements as prepared ones (`npm start`): every answer, error and side effect
 * is what the same calls give on an instance left as PGlite makes it, side by side.
 */
describe('PGlite prepared statements', () => {
  let plain: PGlite;
  let prepared: PGlite;
  const schema = `create table t (id text primary key, n int, big bigint, ok boolean, doc jsonb, tags text[],
    nums bigint[], at timestamptz, raw bytea, note text)`;

  beforeAll(async () => {
    [plain, prepared] = await Promise.all([PGlite.create(), PGlite.create()]);
    usePreparedStatements(prepared, { statements: 8, texts: 64 });
    for (const db of [plain, prepared]) await db.exec(schema);
  });
  afterAll(async () => {
    await Promise.all([plain?.close(), prepared?.close()]);
  });

  const names = async (db: PGlite) =>
    (await db.query<{ name: string }>(`select name from pg_prepared_statements order by name`)).rows.map((r) => r.name);
  const both = async <T>(run: (db: PGlite) => Promise<T>): Promise<T> => {
    const [a, b] = await Promise.allSettled([run(plain), run(prepared)]);
    if (a.status === 'rejected') {
      expect(b.status).toBe('rejected');
      const [ea, eb] = [a.reason as { code?: string; message: string }, (b as PromiseRejectedResult).reason];
      const fields = (e: { code?: string; message: string; query?: string; params?: unknown }) => ({
        code: e.code,
        message: e.message,
        query: e.query,
        params: e.params,
      });
      expect(fields(eb)).toEqual(fields(ea));
      throw ea;
    }
    expect(b).toEqual(a);
    return a.value;
  };

  const insert = `insert into t (id, n, big, ok, doc, tags, nums, at, raw, note)
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning *`;
  const awkward = ["it's", 'back\\slash', `"quoted" and 'single'`, 'ünïcødé ✓', '{"a":1}', "'); drop table t; --", ''];

  it('answers every value type as the plain query does, prepared from the second use on', async () => {
    for (const [i, note] of awkward.entries()) {
      const params = [
        `id-${i}`,
        i,
        9007199254740993n + BigInt(i),
        i % 2 === 0,
        { note, list: [1, 'two', null], nested: { k: note } },
        [note, 'x,y', 'a"b', null],
        [1, 2, 3 + i],
        new Date(Date.UTC(2026, 11, 2, 12, 0, i)),
        new Uint8Array([0, 1, 2, 255, i]),
        i === 3 ? null : note,
      ];
      const inserted = await both((db) => db.query(insert, params));
      expect(inserted.rows).toHaveLength(1);
    }
    expect((await names(prepared)).length).toBe(1);
    const select = `select id, doc, tags, nums, at, raw, note from t where id = any($1) or note = $2 order by id`;
    for (const args of [
      [['id-1', 'id-2'], "it's"],
      [[], null],
      [['nope'], awkward[5]],
    ])
      await both((db) => db.query(select, args));
    await both((db) => db.query(select, [['id-0'], 'x'], { rowMode: 'array' }));
    const all = await both((db) => db.query(`select * from t order by id`));
    expect(all.rows).toHaveLength(awkward.length);
    const updated = await both((db) => db.query(`update t set n = n + $1 where n >= $2`, [10, 3]));
    expect(updated.affectedRows).toBe(awkward.length - 3);
    expect(await names(prepared)).toHaveLength(3);
    expect(await names(plain)).toHaveLength(0);
    // A value cannot end its literal, whatever the session says of backslashes.
    for (const db of [plain, prepared]) await db.exec('set standard_conforming_strings = off');
    try {
      const note = `it\\'s'); drop table t; --`;
      const probe = `select $1::text as v, (select count(*)::int from t) as rows`;
      for (let i = 0; i < 3; i++)
        expect((await both((db) => db.query(probe, [note]))).rows).toEqual([{ v: note, rows: awkward.length }]);
    } finally {
      for (const db of [plain, prepared]) await db.exec('set standard_conforming_strings = on');
    }
  });

  it('reports the same errors, and a refused prepare inside a transaction leaves it usable', async () => {
    const dup = `insert into t (id) values ($1)`;
    await both((db) => db.query(dup, ['dup-1']));
    await expect(both((db) => db.query(dup, ['dup-1']))).rejects.toMatchObject({ code: '23505' });
    await expect(both((db) => db.query(`select $1::int as n`, ['twelve']))).rejects.toMatchObject({ code: '22P02' });
    await expect(both((db) => db.query(`select $1::int as n`, ['x\u0000']))).rejects.toBeDefined();
    // Postgres cannot type `$1` here: the plain statement fails at its own parse, the prepare is
    // refused under its savepoint and the caller's transaction goes on.
    const untyped = `select $1 is null as unknown`;
    const outcome = (db: PGlite) =>
      db.transaction(async (tx) => {
        await tx.query(`insert into t (id) values ($1)`, [`tx-${db === plain ? 'a' : 'b'}`]);
        const first = await tx.query(untyped, [null]).catch((e: { code?: string }) => e.code);
        const second = await tx.query(untyped, [null]).catch((e: { code?: string }) => e.code);
        return { first, second };
      });
    const [a, b] = [await outcome(plain).catch((e) => e.code), await outcome(prepared).catch((e) => e.code)];
    expect(b).toEqual(a);
  });

  it('keeps statements prepared in a transaction that rolled back, and stays within its limits', async () => {
    const text = `select count(*)::int as c from t where id like $1`;
    await prepared
      .transaction(async (tx) => {
        await tx.query(text, ['id-%']);
        await tx.query(text, ['id-%']);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect((await both((db) => db.query(text, ['id-%']))).rows).toEqual([{ c: awkward.length }]);
    for (let i = 0; i < 20; i++) {
      const q = `select $1::int + ${i} as v`;
      await both((db) => db.query(q, [i]));
      await both((db) => db.query(q, [i]));
    }
    expect(await names(prepared)).toHaveLength(8);
  });
});
