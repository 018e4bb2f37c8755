import { ApiError } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Database,
  entityStatesPage,
  foreignKeyViolation,
  openDatabase,
  queryRows,
  statesPageRows,
  uniqueViolation,
  withForeignKeys,
  withUniqueFields,
} from '../src/index.ts';

let database: Database;
beforeAll(async () => {
  database = await openDatabase({ pgliteMemory: true });
  await database.withConnection((c) =>
    c.exec(`create table kinds (id text primary key, kind text not null, name text unique);
            insert into kinds values ('b', 'edge', 'b'), ('B', 'edge', 'B'), ('a', 'transit', 'a'), ('c', 'edge', 'c');
            create table refs (id text primary key, kind_id text not null constraint refs_kind_fkey references kinds(id), tag text);
            insert into refs values ('r1', 'b', 'x'), ('r2', 'b', 'y'), ('r3', 'c', 'z');`),
  );
});
afterAll(async () => {
  await database.close();
});

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
const page = (bounds: { after?: string; limit?: number; ids?: string[] }, key?: string) =>
  entityStatesPage({ type: 'edgeRouter', ...bounds }, key);

describe('statesPageRows', () => {
  it('pages in bytewise key order, after `after`, `limit` at a time', async () => {
    const source = { columns: 'id', from: 'kinds' };
    expect(ids(await statesPageRows(database.db, source, page({ limit: 2 })))).toEqual(['B', 'a']);
    expect(ids(await statesPageRows(database.db, source, page({ after: 'a', limit: 2 })))).toEqual(['b', 'c']);
    expect(ids(await statesPageRows(database.db, source, page({ after: 'c', limit: 2 })))).toEqual([]);
    expect(ids(await statesPageRows(database.db, source, page({ ids: ['c', 'B', 'x'] })))).toEqual(['B', 'c']);
  });

  it('narrows by a scope numbered on its own, with an alias key and distinct columns', async () => {
    const edge = { columns: 'k.id', from: 'kinds k', key: 'k.id', scope: { sql: 'k.kind = $1', params: ['edge'] } };
    expect(ids(await statesPageRows(database.db, edge, page({ after: 'B', limit: 5 }, 'k.id')))).toEqual(['b', 'c']);
    expect(ids(await statesPageRows(database.db, edge, page({ ids: ['a', 'c'] }, 'k.id')))).toEqual(['c']);
    const referenced = { columns: 'distinct kind_id collate "C" as id', from: 'refs', key: 'kind_id' };
    expect(ids(await statesPageRows(database.db, referenced, page({ limit: 5 }, 'kind_id')))).toEqual(['b', 'c']);
    expect(ids(await statesPageRows(database.db, referenced, page({ after: 'b', limit: 5 }, 'kind_id')))).toEqual([
      'c',
    ]);
  });
});

describe('constraint violations', () => {
  const failure = (sql: string) =>
    queryRows(database.db, sql).then(
      () => undefined,
      (err: unknown) => err,
    );

  it('name the violated constraint, and nothing for other errors', async () => {
    const duplicate = await failure(`insert into kinds values ('d', 'edge', 'a')`);
    expect(uniqueViolation(duplicate)).toBe('kinds_name_key');
    expect(foreignKeyViolation(duplicate)).toBeUndefined();
    const dangling = await failure(`insert into refs values ('r9', 'zz', null)`);
    expect(foreignKeyViolation(dangling)).toBe('refs_kind_fkey');
    expect(uniqueViolation(dangling)).toBeUndefined();
    expect(uniqueViolation(new Error('not a database error'))).toBeUndefined();
  });

  it('withForeignKeys turns a known foreign key into its error and passes everything else on', async () => {
    const referenced = () => new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY');
    await expect(
      withForeignKeys(() => queryRows(database.db, `delete from kinds where id = 'b'`), { refs_kind_fkey: referenced }),
    ).rejects.toMatchObject({ code: 'CAN_NOT_DELETE_REFERENCED_ENTITY' });
    await expect(
      withForeignKeys(() => queryRows(database.db, `delete from kinds where id = 'b'`), { other_fkey: referenced }),
    ).rejects.not.toBeInstanceOf(ApiError);
    expect(
      await withForeignKeys(
        async () => (await queryRows(database.db, `delete from kinds where id = 'a' returning id`)).length,
        {
          refs_kind_fkey: referenced,
        },
      ),
    ).toBe(1);
  });

  it('withUniqueFields gives the reference field error for a known unique key', async () => {
    await expect(
      withUniqueFields(() => queryRows(database.db, `insert into kinds values ('e', 'edge', 'c')`), {
        kinds_name_key: { field: 'name', store: 'kinds', value: 'c' },
      }),
    ).rejects.toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'name', reason: "duplicate value 'c' in unique index on kinds store", value: 'c' },
    });
  });
});
