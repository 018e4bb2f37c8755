/** Pagination and sort rules of ZITI-FACTS §3.2–§3.4, then executed end to end on PGlite. */
import type { PGlite } from '@electric-sql/pglite';
import { ApiError } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildListQuery, filterableFields, type ListQueryInput, parseSortParam, selectSql } from '../src/index.ts';
import { createDb, itemEntity, policyEntity } from './fixture.ts';

const page = (input: ListQueryInput) => buildListQuery(itemEntity, input).pagination;

function errorCode(input: ListQueryInput): string {
  try {
    buildListQuery(itemEntity, input);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError).code;
  }
  throw new Error('expected an error');
}

describe('limit / offset', () => {
  it('defaults to limit 10, offset 0', () => {
    expect(buildListQuery(itemEntity, {})).toMatchObject({
      where: 'true',
      params: [],
      limit: 10,
      offset: 0,
      pagination: { limit: 10, offset: 0 },
    });
  });

  it.each<[ListQueryInput['limit'], number, number | null]>([
    ['50', 50, 50],
    [50, 50, 50],
    ['500', 500, 500],
    ['501', 500, 500],
    ['99999999', 500, 500],
    ['99999999999999999999999', 500, 500],
    ['0', 10, 10],
    [0, 10, 10],
    ['-1', -1, null],
    [-1, -1, null],
    ['-2', 10, 10],
    ['-99999', 10, 10],
    ['', 10, 10],
    [' 7 ', 7, 7],
    ['+7', 7, 7],
    [null, 10, 10],
  ])('limit %j → pagination.limit %i', (limit, reported, sqlLimit) => {
    const list = buildListQuery(itemEntity, { limit });
    expect(list.pagination.limit).toBe(reported);
    expect(list.limit).toBe(sqlLimit);
  });

  it.each<[ListQueryInput['offset'], number]>([
    ['0', 0],
    ['20', 20],
    [20, 20],
    ['100000', 100_000],
    ['100001', 100_000],
    ['-5', 0],
    ['', 0],
  ])('offset %j → %i', (offset, expected) => {
    expect(page({ offset })).toEqual({ limit: 10, offset: expected });
  });

  it.each<ListQueryInput>([
    { limit: 'abc' },
    { limit: '1.5' },
    { limit: 2.5 },
    { limit: '10abc' },
    { limit: '0x10' },
    { offset: 'x' },
    { offset: 1.25 },
    { offset: '1e3' },
  ])('non-integer %j → INVALID_PAGINATION', (input) => {
    expect(errorCode(input)).toBe('INVALID_PAGINATION');
  });

  it('limit / skip in the filter win over the params', () => {
    expect(page({ filter: 'true skip 10 limit 2', limit: '50', offset: '3' })).toEqual({ limit: 2, offset: 10 });
    expect(page({ filter: 'limit none', limit: '50' })).toEqual({ limit: -1, offset: 0 });
    expect(buildListQuery(itemEntity, { filter: 'limit none' }).limit).toBeNull();
    // Each clause wins on its own: the other param still applies.
    expect(page({ filter: 'name = "x" limit 5', limit: '50', offset: '3' })).toEqual({ limit: 5, offset: 3 });
    expect(page({ filter: 'true skip 4', limit: '50', offset: '3' })).toEqual({ limit: 50, offset: 4 });
    // The same normalization applies to the filter's values.
    expect(page({ filter: 'limit 0' })).toEqual({ limit: 10, offset: 0 });
    expect(page({ filter: 'limit 100000' })).toEqual({ limit: 500, offset: 0 });
    expect(page({ filter: 'limit -3' })).toEqual({ limit: 10, offset: 0 });
    expect(page({ filter: 'true skip 999999' })).toEqual({ limit: 10, offset: 100_000 });
  });

  it('a blank filter is `true`', () => {
    expect(buildListQuery(itemEntity, { filter: '  ' }).where).toBe('true');
    expect(buildListQuery(itemEntity, { filter: null }).where).toBe('true');
  });
});

describe('sort', () => {
  const orderBy = (input: ListQueryInput) => buildListQuery(itemEntity, input).orderBy;

  it('defaults to id ascending', () => {
    expect(orderBy({})).toBe('t.id collate "C" asc nulls first');
  });

  it('the sort param applies when the filter has no sort by', () => {
    expect(orderBy({ filter: '(name contains "web")', sort: 'name ASC' })).toBe(
      't.name collate "C" asc nulls first, t.id collate "C" asc nulls first',
    );
    expect(orderBy({ sort: 'name asc, createdAt desc' })).toBe(
      't.name collate "C" asc nulls first, t.created_at desc nulls last, t.id collate "C" asc nulls first',
    );
    expect(orderBy({ sort: 'cost' })).toBe('t.cost asc nulls first, t.id collate "C" asc nulls first');
  });

  it('the filter sort by wins and the sort param is then ignored (even if invalid)', () => {
    expect(orderBy({ filter: 'true sort by cost desc', sort: 'name' })).toBe(
      't.cost desc nulls last, t.id collate "C" asc nulls first',
    );
    expect(orderBy({ filter: 'true sort by cost', sort: 'nope desc' })).toContain('t.cost');
  });

  it('id is not repeated as tie-breaker', () => {
    expect(orderBy({ sort: 'id desc' })).toBe('t.id collate "C" desc nulls last');
  });

  it('honours at most 5 sort fields', () => {
    const list = buildListQuery(itemEntity, { sort: 'name, cost, score, enabled, createdAt, owner desc' });
    expect(list.orderBy.split(', ')).toHaveLength(6); // 5 + id
    expect(list.orderBy).not.toContain('owner_id');
  });

  it('unknown or invalid sort param → INVALID_SORT_IDENTIFIER; in the filter → INVALID_FILTER', () => {
    expect(errorCode({ sort: 'nope' })).toBe('INVALID_SORT_IDENTIFIER');
    expect(errorCode({ sort: 'name sideways' })).toBe('INVALID_SORT_IDENTIFIER');
    expect(errorCode({ sort: 'name; drop table items' })).toBe('INVALID_SORT_IDENTIFIER');
    expect(errorCode({ sort: 'roleAttributes' })).toBe('INVALID_SORT_IDENTIFIER');
    expect(errorCode({ filter: 'true sort by nope' })).toBe('INVALID_FILTER');
    expect(() => parseSortParam('name,')).toThrow(ApiError);
    expect(parseSortParam('name ASC, createdAt desc')).toEqual([
      { field: 'name', direction: 'asc' },
      { field: 'createdAt', direction: 'desc' },
    ]);
  });

  it('the sort param error keeps the reference cause', () => {
    try {
      buildListQuery(itemEntity, { sort: 'nope' });
      expect.unreachable();
    } catch (err) {
      expect((err as ApiError).cause).toEqual({ code: 'UNHANDLED', message: "unknown symbol 'nope'" });
    }
  });
});

describe('filterableFields', () => {
  it('lists every public symbol, subqueries included', () => {
    expect(filterableFields(itemEntity)).toEqual([
      'id',
      'name',
      'cost',
      'score',
      'enabled',
      'createdAt',
      'roleAttributes',
      'tags',
      'owner.name',
      'owner',
      'link.ids',
      'policies',
    ]);
    expect(filterableFields(policyEntity)).toEqual(['id', 'name', 'type', 'roleAttributes', 'items']);
  });
});

describe('executed paging', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await createDb();
  }, 120_000);
  afterAll(async () => {
    await db?.close();
  });

  async function run(input: ListQueryInput): Promise<{ ids: string; total: number }> {
    const list = buildListQuery(itemEntity, input);
    const sql = selectSql(itemEntity, list, 't.id');
    const rows = await db.query<{ id: string }>(sql.text, sql.params);
    const count = await db.query<{ count: number }>(sql.countText, sql.countParams);
    return { ids: rows.rows.map((r) => r.id).join(','), total: count.rows[0]!.count };
  }

  it('pages stably with the id tie-breaker and counts ignoring skip/limit', async () => {
    expect(await run({ limit: 2 })).toEqual({ ids: 'a,b', total: 6 });
    expect(await run({ limit: 2, offset: 2 })).toEqual({ ids: 'c,d', total: 6 });
    expect(await run({ limit: 2, offset: 5 })).toEqual({ ids: 'f', total: 6 });
    expect(await run({ filter: 'enabled = true', limit: '1', offset: '1' })).toEqual({ ids: 'c', total: 3 });
    expect(await run({ filter: 'true sort by enabled desc skip 1 limit 3' })).toEqual({ ids: 'c,f,b', total: 6 });
    expect(await run({ filter: 'limit none', sort: 'name desc' })).toEqual({ ids: 'a,f,c,d,b,e', total: 6 });
    expect(await run({ filter: '(name contains "e")', limit: 50, offset: 0, sort: 'name ASC' })).toEqual({
      ids: 'b,d,c,f,a',
      total: 5,
    });
  });
});
