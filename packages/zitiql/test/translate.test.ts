/**
 * Translator tests: every generated statement is executed against a real Postgres (PGlite) and the
 * returned ids are asserted. See fixture.ts for the data.
 */
import type { PGlite } from '@electric-sql/pglite';
import { ApiError } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildListQuery, compileFilter, defineQueryEntity, scalar, selectSql } from '../src/index.ts';
import { createDb, itemEntity, policyEntity } from './fixture.ts';

let db: PGlite;
beforeAll(async () => {
  db = await createDb();
}, 120_000);
afterAll(async () => {
  await db?.close();
});

/** Ids matching `filter` (sorted by the query's own order). */
async function ids(filter: string, entity = itemEntity): Promise<string> {
  const list = buildListQuery(entity, { filter, limit: -1 });
  const sql = selectSql(entity, list, `${entity.alias}.id`);
  const result = await db.query<{ id: string }>(sql.text, sql.params);
  return result.rows.map((r) => r.id).join(',');
}

function filterError(filter: string): string {
  try {
    compileFilter(itemEntity, filter);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('INVALID_FILTER');
    return (err as ApiError & { cause: { message: string } }).cause.message;
  }
  throw new Error(`expected INVALID_FILTER for ${filter}`);
}

const cases: Record<string, Array<[string, string]>> = {
  'string scalar': [
    ['name = "web-server"', 'a'],
    ['name="web-server"', 'a'],
    ['name != "queue"', 'a,b,c,d'],
    ['name < "database"', 'b,d'],
    ['name <= "database"', 'b,c,d'],
    ['name > "queue"', 'a'],
    ['name >= "queue"', 'a,f'],
    ['name in ["queue", "database", "nope"]', 'c,f'],
    ['name not in ["queue"]', 'a,b,c,d'],
    ['name contains "e"', 'a,b,c,d,f'],
    ['name contains "Web"', 'b'],
    ['name not contains "e"', ''],
    ['name icontains "WEB"', 'a,b'],
    ['name not icontains "web"', 'c,d,f'],
    ['name contains ""', 'a,b,c,d,f'],
    ['name contains "\\"quoted\\""', 'd'],
    ['name contains "%"', ''],
    ['name contains "_"', ''],
    ['name = null', 'e'],
    ['name != null', 'a,b,c,d,f'],
    ['name = 5', ''],
    ['id in ["a","c"]', 'a,c'],
    ['id = "a" or name = "queue"', 'a,f'],
  ],
  'number scalar': [
    ['cost = 1', 'a'],
    ['cost = 1.0', 'a'],
    ['cost != 1', 'b,c,d,f'],
    ['cost < 3', 'a,b'],
    ['cost <= 3', 'a,b,c'],
    ['cost > 3', 'd,f'],
    ['cost >= 234', 'd,f'],
    ['cost between 1 and 3', 'a,b'],
    ['cost not between 1 and 3', 'c,d,f'],
    ['cost in [1, 3, 5]', 'a,c'],
    ['cost not in [1]', 'b,c,d,f'],
    ['cost contains 23', 'd,f'],
    ['cost contains "23"', 'd,f'],
    ['cost not contains 23', 'a,b,c'],
    ['cost icontains "23"', 'd,f'],
    ['score = 2.5', 'a'],
    ['score < 0', 'e'],
    ['score >= 2.5e0', 'a,c,f'],
    ['score between -1 and 0.5', 'e'],
    ['cost > 9223372036854775807', ''],
    ['cost < 1e300', 'a,b,c,d,f'],
    ['cost = null', 'e'],
  ],
  'boolean scalar': [
    ['enabled = true', 'a,c,f'],
    ['enabled = false', 'b,e'],
    ['enabled != true', 'b,e'],
    ['enabled', 'a,c,f'],
    ['not enabled', 'b,d,e'],
    ['enabled = null', 'd'],
    ['enabled and cost > 1', 'c,f'],
  ],
  'datetime scalar': [
    ['createdAt < datetime(2024-08-21T14:00:00Z)', 'a,b,e'],
    ['createdAt >= datetime(2024-08-21T14:00:00Z)', 'c,f'],
    ['createdAt = datetime(2020-05-05T05:05:05.123456Z)', 'e'],
    ['createdAt = datetime(2020-05-05T07:05:05.123456+02:00)', 'e'],
    ['createdAt = datetime(2020-05-05T05:05:05.123Z)', ''],
    ['createdAt between datetime(2024-01-01T00:00:00Z) and datetime(2024-08-21T14:00:00Z)', 'a,b'],
    ['createdAt not between datetime(2024-01-01T00:00:00Z) and datetime(2024-08-21T14:00:00Z)', 'c,e,f'],
    ['createdAt in [datetime(2024-01-01T00:00:00Z), datetime(2030-01-01T00:00:00Z)]', 'a,c'],
    ['createdAt != null', 'a,b,c,e,f'],
    ['createdAt > datetime(0000-01-01T00:00:00Z)', 'a,b,c,e,f'],
    ['createdAt < datetime(9999-12-31T23:59:59-23:59)', 'a,b,c,e,f'],
  ],
  'array set': [
    ['anyOf(roleAttributes) = "web"', 'a,b,e'],
    ['anyOf(roleAttributes)="web"', 'a,b,e'],
    ['anyOf(roleAttributes) != "web"', 'a,e,f'],
    ['allOf(roleAttributes) = "web"', 'b,c,d'],
    ['allOf(roleAttributes) != "web"', 'c,d,f'],
    ['anyOf(roleAttributes) in ["queue", "db"]', 'e,f'],
    ['allOf(roleAttributes) not in ["queue"]', 'a,b,c,d,e'],
    ['anyOf(roleAttributes) contains "ue"', 'f'],
    ['anyOf(roleAttributes) icontains "PRO"', 'a,e'],
    ['anyOf(roleAttributes) < "db"', ''],
    ['anyOf(roleAttributes) = null', ''],
    ['count(roleAttributes) = 0', 'c,d'],
    ['count(roleAttributes) >= 2', 'a,e'],
    ['isEmpty(roleAttributes)', 'c,d'],
    ['not isEmpty(roleAttributes)', 'a,b,e,f'],
    ['not anyOf(roleAttributes) = "web"', 'c,d,f'],
    ['anyOf(roleAttributes) = "web" and anyOf(roleAttributes) = "prod"', 'a,e'],
  ],
  'query set': [
    ['anyOf(link.ids) between 100 and 110', 'a,b'],
    ['allOf(link.ids) < 500', 'a,b,c,d,e,f'],
    ['allOf(link.ids) >= 100', 'a,b,d,e,f'],
    ['anyOf(link.ids) = 120', 'b'],
    ['anyOf(link.ids) contains 0', 'a,b'],
    ['count(link.ids) = 2', 'a,b'],
    ['count(link.ids) between 1 and 2', 'c'],
    ['isEmpty(link.ids)', 'd,e,f'],
  ],
  'map (jsonb) symbols': [
    ['tags.env = "prod"', 'a,c'],
    ['tags.env != "prod"', 'b,f'],
    ['tags.env icontains "PROD"', 'a,c,f'],
    ['tags.env in ["dev", "Prod"]', 'b,f'],
    ['tags.age >= 90', 'a,b'],
    ['tags.age = 95', 'a,b'],
    ['tags.age < 50', 'c'],
    ['tags.age between 30 and 95', 'c'],
    ['tags.age = "95"', 'b'],
    ['tags.age = null', 'd,e,f'],
    ['tags.age != null', 'a,b,c'],
    ['tags.on = true', 'a'],
    ['tags.on', 'a'],
    ['not tags.on', 'b,c,d,e,f'],
    ['tags.nested.deep = "x"', 'a'],
    ['\'tags.env\' = "dev"', 'b'],
    ['tags.missing = "x"', ''],
    ['tags.env = datetime(2024-01-01T00:00:00Z)', ''],
  ],
  'foreign-key traversal': [
    ['owner.name = "alice"', 'a,c'],
    ['owner.name != "alice"', 'b,e'],
    ['owner = "o2"', 'b,e'],
    ['owner.name in ["alice", "bob"] and not (owner.name = "bob")', 'a,c'],
  ],
  subqueries: [
    ['not isEmpty(from policies where type = 1)', 'a,b,c'],
    ['isEmpty(from policies where type = 1)', 'd,e,f'],
    ['count(from policies where true) = 2', 'a,c'],
    ['count(policies) = 1', 'b'],
    ['anyOf(policies) = "p2"', 'a'],
    ['allOf(policies) in ["p1", "p3"]', 'b,c,d,e,f'],
    ['isEmpty(from policies where anyOf(items) = "b")', 'd,e,f'],
    ['not isEmpty(from policies where name contains "dial" and count(items) > 1)', 'a,b,c'],
    ['not isEmpty(from policies where not isEmpty(from items where name = "database"))', 'a,b,c'],
    ['count(from policies where type = 1 limit 1) = 1', 'a,b,c'],
    ['count(from policies where true skip 1) = 1', 'a,c'],
    ['count(from policies where true sort by name desc limit none) = 2', 'a,c'],
  ],
  'negation is two-valued like Go': [
    ['not (name = "queue")', 'a,b,c,d,e'],
    ['not (cost < 5)', 'd,e,f'],
    ['not (name contains "e" or cost > 100)', 'e'],
    ['not (not (name = "queue"))', 'f'],
    ['not (tags.env = "prod")', 'b,d,e,f'],
    ['not (owner.name = "alice") and not (name = null)', 'b,d,f'],
    ['true', 'a,b,c,d,e,f'],
    ['false', ''],
    ['not false', 'a,b,c,d,e,f'],
  ],
};

describe.each(Object.entries(cases))('%s', (_group, rows) => {
  it.each(rows)('%s → [%s]', async (filter, expected) => {
    expect(await ids(filter)).toBe(expected);
  });
});

describe('sorting (bytewise strings, nulls first ascending, id tie-breaker)', () => {
  it.each([
    ['true sort by name', 'e,b,d,c,f,a'],
    ['true sort by name desc', 'a,f,c,d,b,e'],
    ['true sort by score desc', 'c,f,a,b,e,d'],
    ['true sort by enabled, cost desc', 'd,b,e,f,c,a'],
    ['true sort by owner.name desc', 'b,e,a,c,d,f'],
    ['true sort by id desc', 'f,e,d,c,b,a'],
    ['true', 'a,b,c,d,e,f'],
  ])('%s → [%s]', async (filter, expected) => {
    expect(await ids(filter)).toBe(expected);
  });

  it('leaves a constant symbol (isSystem of an entity without system rows) out of ORDER BY', async () => {
    const constant = defineQueryEntity({
      ...itemEntity,
      fields: { ...itemEntity.fields, isSystem: scalar('false', 'boolean') },
    });
    // Postgres refuses `order by false desc` ("non-integer constant in ORDER BY").
    expect(await ids('true sort by isSystem desc', constant)).toBe('a,b,c,d,e,f');
    expect(await ids('true sort by isSystem, name desc', constant)).toBe('a,f,c,d,b,e');
  });

  it('rejects unknown and set symbols in sort by', () => {
    expect(filterError('true sort by nope')).toBe("unknown symbol 'nope'");
    expect(filterError('true sort by roleAttributes')).toMatch(/set symbol/);
    expect(filterError('true sort by policies')).toMatch(/set symbol/);
    expect(filterError('true sort by tags')).toMatch(/map symbol/);
    expect(filterError('true sort by tags.env')).toBe(
      "symbol 'tags.env' is a map symbol and can not be used for sorting",
    );
  });
});

describe('semantic errors are INVALID_FILTER', () => {
  it.each([
    ['foo = 1', "unknown symbol 'foo'"],
    ['tags = "x"', "symbol 'tags' is a map symbol, use it as 'tags.<key>'"],
    ['roleAttributes = "x"', "symbol 'roleAttributes' is a set symbol but is used in non-set function context"],
    ['policies = "x"', "symbol 'policies' is a set symbol but is used in non-set function context"],
    ['link.ids', "symbol 'link.ids' is a set symbol but is used in non-set function context"],
    ['anyOf(name) = "x"', "symbol 'name' is not a set symbol but is used in set function anyOf"],
    ['allOf(tags.env) = "x"', "symbol 'tags.env' is not a set symbol but is used in set function allOf"],
    ['count(cost) = 1', "symbol 'cost' is not a set symbol but is used in set function count"],
    ['isEmpty(name)', "symbol 'name' is not a set symbol but is used in set function isEmpty"],
    ['anyOf(nope) = 1', "unknown symbol 'nope'"],
    ['isEmpty(from nope where true)', "unknown symbol 'nope'"],
    [
      'isEmpty(from roleAttributes where true)',
      "symbol 'roleAttributes' is not an entity set and can not be used in a from clause",
    ],
    ['isEmpty(from policies where cost = 1)', "unknown symbol 'cost'"],
    ['cost = "1"', "symbol 'cost' of type number can not be compared to a string value"],
    ['enabled = 1', "symbol 'enabled' of type boolean can not be compared to a number value"],
    ['createdAt = "2024"', "symbol 'createdAt' of type datetime can not be compared to a string value"],
    ['name = true', "symbol 'name' of type string can not be compared to a boolean value"],
    ['name < datetime(2024-01-01T00:00:00Z)', "symbol 'name' of type string can not be compared to a datetime value"],
    ['enabled contains "t"', "symbol 'enabled' of type boolean can not be used with contains"],
    ['createdAt icontains "2024"', "symbol 'createdAt' of type datetime can not be used with icontains"],
    ['count(roleAttributes) = "2"', "symbol 'count' of type number can not be compared to a string value"],
    ['name', "symbol 'name' is not a boolean symbol"],
    ['anyOf(roleAttributes) = 1', ''],
  ])('%s', (filter, message) => {
    if (message === '') {
      // Go converts the number to a string: valid.
      expect(() => compileFilter(itemEntity, filter)).not.toThrow();
      return;
    }
    expect(filterError(filter)).toBe(message);
  });
});

describe('parameters', () => {
  it('never interpolates values and honours paramOffset', () => {
    const compiled = compileFilter(itemEntity, 'name = "x\' or 1=1 --" and cost in [1, 2] and tags.env = "q"', {
      paramOffset: 2,
    });
    expect(compiled.where).not.toContain("x'");
    expect(compiled.where).toContain('$3::text');
    expect(compiled.where).not.toMatch(/\$[12]\b/);
    expect(compiled.params).toEqual(["x' or 1=1 --", '1', '2', 'env', 'q']);
  });

  it('= null / != null become IS NULL / IS NOT NULL; contains is LIKE with the pattern characters escaped', () => {
    expect(compileFilter(itemEntity, 'name = null').where).toBe('((t.name) is null)');
    expect(compileFilter(itemEntity, 'name != null').where).toBe('((t.name) is not null)');
    const contains = compileFilter(itemEntity, 'name contains "%_\\\\"');
    expect(contains.where).toBe('((t.name)::text like $1::text)');
    expect(contains.params).toEqual(['%\\%\\_\\\\%']);
    expect(compileFilter(itemEntity, 'name icontains "Ab"').where).toBe('((t.name)::text ilike $1::text)');
  });

  it('rejects filters with too many values', () => {
    const values = Array.from({ length: 10_001 }, (_, i) => i).join(',');
    expect(() => compileFilter(itemEntity, `cost in [${values}]`)).toThrow(ApiError);
  });

  it('SQL-injection payloads in literals match nothing and break nothing', async () => {
    const payloads = [
      "' or '1'='1",
      "'; drop table items; --",
      '\\"; drop table items; --',
      "x' union select id from owners --",
      '$1',
      "E'\\x00'",
      "') or true or ('",
      '%',
      '*/ or 1=1 /*',
    ];
    for (const payload of payloads) {
      const literal = JSON.stringify(payload); // a ZitiQL string literal with escapes
      for (const filter of [
        `name = ${literal}`,
        `name contains ${literal}`,
        `name icontains ${literal}`,
        `tags.env = ${literal}`,
        `anyOf(roleAttributes) = ${literal}`,
        `allOf(roleAttributes) = ${literal} and not isEmpty(roleAttributes)`,
        `id in [${literal}, "zz"]`,
        `isEmpty(from policies where name = ${literal}) and name = ${literal}`,
      ]) {
        expect(await ids(filter), filter).toBe('');
      }
    }
    const count = await db.query<{ n: number }>('select count(*)::int as n from items');
    expect(count.rows[0]!.n).toBe(6);
  });
});

describe('entity declarations', () => {
  it('works for the linked entity on its own', async () => {
    expect(await ids('type = 1', policyEntity)).toBe('p1,p3');
    expect(await ids('anyOf(items) = "c" sort by name', policyEntity)).toBe('p1,p3');
    expect(await ids('count(from items where enabled) = 1', policyEntity)).toBe('p2,p3');
  });

  it('rejects bad declarations at startup', () => {
    expect(() => defineQueryEntity({ table: 'x', alias: 'x', fields: { name: scalar('x.name', 'string') } })).toThrow(
      /default sort/,
    );
    expect(() =>
      defineQueryEntity({
        table: 'x',
        alias: 'x',
        fields: { id: scalar('x.id', 'string'), env2: scalar('x.e', 'string') },
      }),
    ).toThrow(/can not be written/);
    expect(() => defineQueryEntity({ table: 'x', alias: 'x y', fields: { id: scalar('x.id', 'string') } })).toThrow(
      /alias/,
    );
  });
});
