/**
 * The in-memory evaluator: every operator the parser accepts, on JSON documents; and, for the
 * operators a jsonb map field supports, the same answers as the SQL translator on the same
 * documents (run on PGlite).
 */
import type { PGlite } from '@electric-sql/pglite';
import { ApiError } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildListQuery,
  compareText,
  compileCondition,
  compilePredicate,
  defineQueryEntity,
  lookup,
  map,
  parseQuery,
  scalar,
  selectSql,
} from '../src/index.ts';
import { createDb } from './fixture.ts';

const identity = {
  id: 'i1',
  name: 'web-server',
  typeId: 'Device',
  isAdmin: false,
  isDefaultAdmin: false,
  disabled: true,
  roleAttributes: ['web', 'prod'],
  externalId: null,
  authPolicyId: 'default',
  cost: 42,
  ratio: 2.5,
  tags: { env: 'prod', age: 95, on: true, 'dotted.key': 'yes', nested: { deep: 'x' } },
  ports: [80, 443],
  empty: [],
  createdAt: '2024-06-01T12:00:00.123456Z',
  updatedAt: 'not a time',
};

function matches(filter: string, document: unknown = identity): boolean {
  return compileCondition(filter)(document);
}

function filterError(filter: string): string {
  try {
    compileCondition(filter);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('INVALID_FILTER');
    return (err as ApiError & { cause: { message: string } }).cause.message;
  }
  throw new Error(`expected INVALID_FILTER for ${filter}`);
}

describe('evaluate on a document', () => {
  const cases: Record<string, Array<[string, boolean]>> = {
    'constants and blank': [
      ['true', true],
      ['false', false],
      ['', true],
      ['   ', true],
    ],
    '= and != on strings': [
      ['name = "web-server"', true],
      ['name = "Web-Server"', false],
      ['name != "queue"', true],
      ['name != "web-server"', false],
      ['typeId="Device"', true],
    ],
    'ordering on strings (bytewise)': [
      ['name < "x"', true],
      ['name < "a"', false],
      ['name <= "web-server"', true],
      ['name > "W"', true],
      ['name >= "web-server"', true],
      ['name > "web-server"', false],
    ],
    numbers: [
      ['cost = 42', true],
      ['cost != 42', false],
      ['cost < 43', true],
      ['cost <= 42', true],
      ['cost > 42', false],
      ['cost >= 42.0', true],
      ['ratio = 2.5', true],
      ['ratio > 2', true],
      ['cost = -1', false],
      ['cost = 4.2e1', true],
    ],
    'number literal against a string: its text': [
      ['name = 5', false],
      ['tags.env != 5', true],
      ['name > 5', true],
    ],
    booleans: [
      ['disabled', true],
      ['isAdmin', false],
      ['not isAdmin', true],
      ['disabled = true', true],
      ['disabled != true', false],
      ['isAdmin = false', true],
      ['tags.on', true],
      ['name', false],
    ],
    'type mismatch is no match, negated forms too': [
      ['cost = "42"', false],
      ['cost != "42"', false],
      ['disabled = "true"', false],
      ['name = true', false],
      ['name != true', false],
      ['roleAttributes = "web"', false],
      ['tags = "x"', false],
      ['not (cost = "42")', true],
    ],
    'null and missing': [
      ['externalId = null', true],
      ['externalId != null', false],
      ['missing = null', true],
      ['missing != null', false],
      ['name = null', false],
      ['name != null', true],
      ['missing = "x"', false],
      ['missing != "x"', false],
      ['not (missing = "x")', true],
      ['externalId != "x"', false],
      ['missing < 5', false],
      ['missing in ["a"]', false],
      ['missing not in ["a"]', false],
      ['missing contains "a"', false],
      ['missing not contains "a"', false],
      ['missing between 1 and 2', false],
      ['missing not between 1 and 2', false],
      ['missing', false],
      ['not missing', true],
      ['roleAttributes = null', false],
      ['tags.nope.deeper = null', true],
    ],
    'in and not in': [
      ['name in ["queue", "web-server"]', true],
      ['name in ["queue"]', false],
      ['name not in ["queue"]', true],
      ['name not in ["web-server", "queue"]', false],
      ['cost in [1, 42]', true],
      ['cost not in [1, 2]', true],
      ['cost in ["42"]', false],
      ['cost not in ["42"]', false],
      ['createdAt in [datetime(2024-06-01T12:00:00.123456Z)]', true],
    ],
    'between (half-open) and not between': [
      ['cost between 42 and 43', true],
      ['cost between 41 and 42', false],
      ['cost not between 41 and 42', true],
      ['cost not between 42 and 43', false],
      ['ratio between 2.4 and 2.6', true],
      ['createdAt between datetime(2024-01-01T00:00:00Z) and datetime(2025-01-01T00:00:00Z)', true],
      ['createdAt not between datetime(2024-01-01T00:00:00Z) and datetime(2025-01-01T00:00:00Z)', false],
    ],
    'contains and icontains': [
      ['name contains "server"', true],
      ['name contains "Server"', false],
      ['name not contains "server"', false],
      ['name icontains "SERVER"', true],
      ['name not icontains "SERVER"', false],
      ['name contains ""', true],
      ['name contains "%"', false],
      ['cost contains 4', true],
      ['cost contains "2"', true],
      ['ratio contains ".5"', true],
      ['disabled contains "t"', false],
      ['disabled not contains "t"', false],
    ],
    'datetimes against RFC 3339 strings': [
      ['createdAt = datetime(2024-06-01T12:00:00.123456Z)', true],
      ['createdAt = datetime(2024-06-01T14:00:00.123456+02:00)', true],
      ['createdAt = datetime(2024-06-01T12:00:00.123457Z)', false],
      ['createdAt < datetime(2024-06-01T12:00:00.123457Z)', true],
      ['createdAt > datetime(2024-06-01T12:00:00.123Z)', true],
      ['createdAt >= datetime(2024-06-01T12:00:00.123456Z)', true],
      ['createdAt <= datetime(2024-01-01T00:00:00Z)', false],
      ['updatedAt < datetime(2030-01-01T00:00:00Z)', false],
      ['updatedAt != datetime(2030-01-01T00:00:00Z)', false],
      ['cost < datetime(2030-01-01T00:00:00Z)', false],
    ],
    'map paths': [
      ['tags.env = "prod"', true],
      ['tags.age = 95', true],
      ['tags.age > 90', true],
      ['tags.nested.deep = "x"', true],
      ['tags.dotted.key = "yes"', true],
      ['tags.env.more = null', true],
    ],
    'anyOf and allOf': [
      ['anyOf(roleAttributes) = "web"', true],
      ['anyOf(roleAttributes) = "db"', false],
      ['anyOf(roleAttributes) != "web"', true],
      ['allOf(roleAttributes) != "db"', true],
      ['allOf(roleAttributes) = "web"', false],
      ['allOf(roleAttributes) contains "e"', false],
      ['anyOf(roleAttributes) icontains "PRO"', true],
      ['anyOf(roleAttributes) in ["x", "prod"]', true],
      ['anyOf(ports) > 100', true],
      ['allOf(ports) between 80 and 444', true],
      ['allOf(ports) not between 80 and 443', false],
      ['anyOf(ports) = "80"', false],
      ['allOf(empty) = "x"', true],
      ['anyOf(empty) = "x"', false],
      ['allOf(missing) = "x"', true],
      ['anyOf(missing) = "x"', false],
      ['allOf(name) = "web-server"', false],
      ['anyOf(name) = "web-server"', false],
    ],
    'count and isEmpty': [
      ['count(roleAttributes) = 2', true],
      ['count(roleAttributes) != 2', false],
      ['count(roleAttributes) > 1', true],
      ['count(roleAttributes) in [1, 2]', true],
      ['count(roleAttributes) between 0 and 2', false],
      ['count(empty) = 0', true],
      ['count(missing) = 0', true],
      ['count(name) = 0', false],
      ['count(name) != 0', false],
      ['count(ports) contains 2', true],
      ['count(ports) = null', false],
      ['isEmpty(empty)', true],
      ['isEmpty(missing)', true],
      ['isEmpty(roleAttributes)', false],
      ['not isEmpty(roleAttributes)', true],
      ['isEmpty(name)', false],
    ],
    'and, or, not and precedence': [
      ['name = "web-server" and cost = 42', true],
      ['name = "web-server" and cost = 41', false],
      ['name = "x" or cost = 42', true],
      ['name = "x" or cost = 41', false],
      ['not name = "x" and cost = 42', true],
      ['name = "x" and cost = 41 or disabled', true],
      ['name = "x" and (cost = 41 or disabled)', false],
      ['not (name = "x" or not disabled)', true],
      ['not not disabled', true],
    ],
  };

  for (const [group, list] of Object.entries(cases)) {
    it(group, () => {
      for (const [filter, expected] of list) expect([filter, matches(filter)]).toEqual([filter, expected]);
    });
  }

  it('is not fooled by non-object documents', () => {
    for (const document of [null, 'text', 5, [identity]]) {
      expect(matches('name = null', document)).toBe(true);
      expect(matches('name = "web-server"', document)).toBe(false);
      expect(matches('allOf(roleAttributes) = "x"', document)).toBe(true);
    }
  });

  it('reads own keys only (no prototype properties)', () => {
    expect(matches('valueOf = null', {})).toBe(true);
    expect(matches('toString != null', {})).toBe(false);
    expect(lookup({ a: { b: 1 } }, 'a.b')).toBe(1);
    expect(lookup({ 'a.b': 2, a: { b: 1 } }, 'a.b')).toBe(2);
    expect(lookup({ a: { 'b.c': 3 } }, 'a.b.c')).toBe(3);
    expect(lookup({ a: [{ b: 1 }] }, 'a.b')).toBeUndefined();
  });

  it('compares text bytewise (code points), like Go and collate "C"', () => {
    expect(compareText('a', 'b')).toBe(-1);
    expect(compareText('B', 'a')).toBe(-1);
    expect(compareText('ab', 'a')).toBe(1);
    expect(compareText('x', 'x')).toBe(0);
    // U+FF5E (a BMP code unit above the surrogates) sorts before U+1F600 (a surrogate pair).
    expect(compareText('\uff5e', '😀')).toBe(-1);
    expect(Buffer.compare(Buffer.from('\uff5e'), Buffer.from('😀'))).toBe(-1);
    expect(matches('name < "😀"', { name: '\uff5e' })).toBe(true);
  });

  it('refuses what a document cannot answer, with INVALID_FILTER', () => {
    expect(filterError('isEmpty(from policies where name = "x")')).toMatch(/from policies/);
    expect(filterError('count(from policies where true) > 1')).toMatch(/from policies/);
    expect(filterError('name = "x" sort by name')).toMatch(/sort by/);
    expect(filterError('limit 5')).toMatch(/limit/);
    expect(filterError('name = "x" skip 1')).toMatch(/skip/);
    expect(filterError('count(roleAttributes) = "a"')).toMatch(/string/);
    expect(filterError('count(roleAttributes) in ["a"]')).toMatch(/string/);
    expect(filterError('count(roleAttributes) > datetime(2024-01-01T00:00:00Z)')).toMatch(/datetime/);
    expect(filterError('name = ')).toMatch(/Unexpected symbol/);
    expect(filterError('name === "x"')).toMatch(/Unexpected symbol/);
    // compilePredicate ignores the paging clauses of a list query but still checks the condition.
    expect(compilePredicate(parseQuery('cost = 42 sort by name limit 1'))(identity)).toBe(true);
    expect(() => compilePredicate(parseQuery('isEmpty(from x where true)'))).toThrow(ApiError);
  });
});

describe('the same answers as the SQL translator on jsonb documents', () => {
  let db: PGlite;
  const docs = defineQueryEntity({
    table: `(select id, jsonb_build_object('name', name, 'cost', cost, 'score', score, 'enabled', enabled,
      'tags', tags) as doc from items)`,
    alias: 'j',
    fields: { id: scalar('j.id', 'string'), doc: map('j.doc') },
  });
  let rows: { id: string; doc: unknown }[] = [];

  beforeAll(async () => {
    db = await createDb();
    rows = (await db.query<{ id: string; doc: unknown }>(`select id, doc from ${docs.table} d order by id`)).rows;
  }, 120_000);
  afterAll(async () => {
    await db?.close();
  });

  const filters = [
    'doc.name = "web-server"',
    'doc.name != "queue"',
    'doc.name < "database"',
    'doc.name <= "database"',
    'doc.name > "queue"',
    'doc.name >= "queue"',
    'doc.name in ["queue", "database", "nope"]',
    'doc.name not in ["queue"]',
    'doc.name contains "e"',
    'doc.name not contains "e"',
    'doc.name icontains "WEB"',
    'doc.name not icontains "web"',
    'doc.name contains "\\"quoted\\""',
    'doc.name contains "%"',
    'doc.name = null',
    'doc.name != null',
    'doc.name = 5',
    'doc.name > 5',
    'doc.name between 1 and 9',
    'doc.cost = 1',
    'doc.cost != 1',
    'doc.cost < 3',
    'doc.cost >= 234',
    'doc.cost in [1, 2]',
    'doc.cost not in [1]',
    'doc.cost between 1 and 3',
    'doc.cost not between 1 and 3',
    'doc.cost between 1.5 and 300',
    'doc.cost contains 23',
    'doc.cost contains "23"',
    'doc.cost = "1"',
    'doc.cost != "1"',
    'doc.score > 0.5',
    'doc.score = 2.5',
    'doc.score contains ".5"',
    'doc.enabled',
    'not doc.enabled',
    'doc.enabled = true',
    'doc.enabled != false',
    'doc.enabled = null',
    'doc.enabled != null',
    'doc.tags.env = "prod"',
    'doc.tags.env icontains "PROD"',
    'doc.tags.age = 95',
    'doc.tags.age = "95"',
    'doc.tags.age > 50',
    'doc.tags.age != 95',
    'doc.tags.age = null',
    'doc.tags.on',
    'doc.tags.nested.deep = "x"',
    'doc.tags.missing = null',
    'doc.tags.missing != "x"',
    'not (doc.tags.missing = "x")',
    '(doc.name = "queue" or doc.cost < 3) and not doc.enabled',
    'not (doc.cost > 2 and doc.enabled) or doc.name = null',
  ];

  it.each(filters)('%s', async (filter) => {
    const list = buildListQuery(docs, { filter, limit: -1 });
    const sql = selectSql(docs, list, 'j.id');
    const expected = (await db.query<{ id: string }>(sql.text, sql.params)).rows.map((r) => r.id).sort();
    const predicate = compileCondition(filter);
    const actual = rows.filter((row) => predicate({ doc: row.doc })).map((r) => r.id);
    expect(actual).toEqual(expected);
  });
});
