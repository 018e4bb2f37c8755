import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase, queryRows } from '../src/index.ts';
import { date, dateOrNull, json, strOrNull } from '../src/db/row-decode.ts';

describe('row decoders', () => {
  const at = new Date('2024-05-06T07:08:09.123Z');

  it('date: a Date as it is, Postgres text (and ISO text) as the same instant', () => {
    expect(date(at)).toBe(at);
    expect(date('2024-05-06 07:08:09.123+00').getTime()).toBe(at.getTime());
    expect(date('2024-05-06 09:08:09.123+02').getTime()).toBe(at.getTime());
    expect(date('2024-05-06T07:08:09.123Z').getTime()).toBe(at.getTime());
  });

  it('dateOrNull: null and an absent key are null, either form else a date', () => {
    expect(dateOrNull(null)).toBeNull();
    expect(dateOrNull(undefined)).toBeNull();
    expect(dateOrNull(at)).toBe(at);
    expect(dateOrNull('2024-05-06 07:08:09.123+00')?.getTime()).toBe(at.getTime());
  });

  it('json: parsed objects as they are, text parsed, null the fallback', () => {
    const tags = { a: 1, b: ['x'] };
    expect(json(tags, {})).toBe(tags);
    expect(json('{"a":1,"b":["x"]}', {})).toEqual(tags);
    expect(json([1, 2], [])).toEqual([1, 2]);
    expect(json('[1,2]', [])).toEqual([1, 2]);
    expect(json(null, {})).toEqual({});
    expect(json(undefined, [])).toEqual([]);
    expect(json(null, null)).toBeNull();
    expect(json(undefined, null)).toBeNull();
    // Without a fallback, SQL null comes back as it came.
    expect(json(null)).toBeNull();
    expect(json(undefined)).toBeUndefined();
    expect(json('"text"')).toBe('text');
    expect(json(true)).toBe(true);
  });

  it('strOrNull: null and an absent key are null, anything else its text', () => {
    expect(strOrNull(null)).toBeNull();
    expect(strOrNull(undefined)).toBeNull();
    expect(strOrNull('id')).toBe('id');
    expect(strOrNull(42)).toBe('42');
    expect(strOrNull('')).toBe('');
  });
});

describe('row decoders on a driver row (PGlite)', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase({ pgliteMemory: true });
  });
  afterAll(async () => {
    await database.close();
  });

  it('decode what queryRows answers: timestamps as text, json and jsonb, nulls', async () => {
    const [row] = await queryRows<Record<string, unknown>>(
      database.db,
      `select '2024-05-06T07:08:09.123Z'::timestamptz as at, null::timestamptz as never,
              '{"a":1}'::jsonb as tags, '[1,2]'::json as list, null::jsonb as absent, null::text as name`,
    );
    expect(typeof row!.at).toBe('string');
    expect(date(row!.at).toISOString()).toBe('2024-05-06T07:08:09.123Z');
    expect(dateOrNull(row!.never)).toBeNull();
    expect(json(row!.tags, {})).toEqual({ a: 1 });
    expect(json(row!.list, [])).toEqual([1, 2]);
    expect(json(row!.absent, { none: true })).toEqual({ none: true });
    expect(strOrNull(row!.name)).toBeNull();
  });
});
