/**
 * Fuzz: thousands of generated, mutated and random filter strings (seeded PRNG, bounded sizes). Each one
 * must either translate and execute on Postgres without error, or fail with an ApiError of a filter/sort
 * code — never anything else (no Postgres error, no TypeError, no stack overflow).
 */
import type { PGlite } from '@electric-sql/pglite';
import { ApiError } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../test/support/prng.ts';
import { buildListQuery, type ListQueryInput, selectSql } from '../src/index.ts';
import { createDb, itemEntity, policyEntity } from './fixture.ts';

const ACCEPTED = new Set(['INVALID_FILTER', 'INVALID_SORT_IDENTIFIER']);

class Gen {
  constructor(private readonly rand: () => number) {}

  int(n: number): number {
    return Math.floor(this.rand() * n);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  chance(p: number): boolean {
    return this.rand() < p;
  }

  string(): string {
    const raw = this.pick([
      '',
      'web',
      'WEB',
      'prod',
      'e',
      '%',
      '_',
      "'",
      "' or '1'='1",
      "'; drop table items; --",
      '"',
      '\\',
      'x\ny',
      '\t',
      'üñí',
      '😀',
      '$1',
      '::text',
      ') or (1=1',
      '\u00a0',
      'a'.repeat(300),
    ]);
    return JSON.stringify(raw);
  }

  number(): string {
    return this.pick([
      '0',
      '1',
      '-1',
      '2.5',
      '-0',
      '1e3',
      '1E-7',
      '1e308',
      '-1.7976931348623157e308',
      '9223372036854775807',
      '9223372036854775808',
      '-9223372036854775809',
      '123456789012345678901234567890',
      '4.9e-324',
      '1e-400',
      String(this.int(2000) - 1000),
    ]);
  }

  datetime(): string {
    return `datetime(${this.pick([
      '2024-08-21T14:00:00Z',
      '2020-05-05T05:05:05.123456Z',
      '0000-01-01T00:00:00Z',
      '0000-01-01T00:00:00+23:59',
      '9999-12-31T23:59:59-23:59',
      '2024-02-29T00:00:00z',
      '2023-02-29T00:00:00Z',
      '2024-01-01t00:00:00.999999999+05:30',
      '2024-01-01T00:00:60Z',
    ])})`;
  }

  literal(kinds: string[]): string {
    switch (this.pick(kinds)) {
      case 'string':
        return this.string();
      case 'number':
        return this.number();
      case 'datetime':
        return this.datetime();
      case 'bool':
        return this.pick(['true', 'false', 'TRUE']);
      default:
        return 'null';
    }
  }

  scalarSymbol(): string {
    return this.pick([
      'id',
      'name',
      'cost',
      'score',
      'enabled',
      'createdAt',
      'owner',
      'owner.name',
      'tags.env',
      'tags.age',
      'tags.on',
      'tags.nested.deep',
      "'tags.env'",
      'tags',
      'roleAttributes',
      'policies',
      'nope',
      'type',
    ]);
  }

  setSymbol(): string {
    return this.pick(['roleAttributes', 'link.ids', 'policies', 'name', 'tags.env', 'nope']);
  }

  lhs(depth: number): string {
    const r = this.rand();
    if (r < 0.6) return this.scalarSymbol();
    if (r < 0.75) return `anyOf(${this.setSymbol()})`;
    if (r < 0.85) return `allOf(${this.setSymbol()})`;
    return `count(${this.setExpr(depth)})`;
  }

  setExpr(depth: number): string {
    if (depth > 2 || this.chance(0.5)) return this.setSymbol();
    const from = this.pick(['policies', 'items', 'roleAttributes', 'nope']);
    return `from ${from} where ${this.query(depth + 1, true)}`;
  }

  operation(depth: number): string {
    const lhs = this.lhs(depth);
    switch (this.int(7)) {
      case 0:
        return `${lhs} ${this.pick(['=', '!='])} ${this.literal(['string', 'number', 'datetime', 'bool', 'null'])}`;
      case 1:
        return `${lhs}${this.pick(['<', '<=', '>', '>='])}${this.literal(['string', 'number', 'datetime'])}`;
      case 2: {
        const kind = this.pick(['string', 'number', 'datetime']);
        const n = 1 + this.int(4);
        const values = Array.from({ length: n }, () => this.literal([kind]));
        return `${lhs} ${this.pick(['in', 'not in', 'IN'])} [${values.join(', ')}]`;
      }
      case 3: {
        const kind = this.pick(['number', 'datetime']);
        return `${lhs} ${this.pick(['between', 'not between'])} ${this.literal([kind])} and ${this.literal([kind])}`;
      }
      case 4:
        return `${lhs} ${this.pick(['contains', 'not contains'])} ${this.literal(['string', 'number'])}`;
      case 5:
        return `${lhs} ${this.pick(['icontains', 'not icontains'])} ${this.string()}`;
      default:
        return `isEmpty(${this.setExpr(depth)})`;
    }
  }

  bool(depth: number): string {
    const r = this.rand();
    if (depth > 3 || r < 0.45) return this.operation(depth);
    if (r < 0.55) return this.pick(['true', 'false', 'enabled', 'tags.on', 'name']);
    if (r < 0.65) return `not ${this.bool(depth + 1)}`;
    if (r < 0.75) return `(${this.bool(depth + 1)})`;
    const op = this.pick(['and', 'or', 'AND', 'Or']);
    return `${this.bool(depth + 1)} ${op} ${this.bool(depth + 1)}`;
  }

  query(depth = 0, inner = false): string {
    let q = this.bool(depth);
    if (this.chance(inner ? 0.1 : 0.3)) {
      const fields = Array.from(
        { length: 1 + this.int(7) },
        () => `${this.scalarSymbol()}${this.pick(['', ' asc', ' DESC'])}`,
      );
      q += ` sort by ${fields.join(', ')}`;
    }
    if (this.chance(0.2)) q += ` skip ${this.pick(['0', '1', '5', '100001', '-3'])}`;
    if (this.chance(0.2)) q += ` limit ${this.pick(['0', '1', '2', 'none', '600', '-1', '-7'])}`;
    return q;
  }

  mutate(source: string): string {
    let s = source;
    const edits = 1 + this.int(3);
    const alphabet = [
      '"',
      "'",
      '(',
      ')',
      '[',
      ']',
      ',',
      '=',
      '!',
      '<',
      '>',
      '-',
      '.',
      '\\',
      ' ',
      '\t',
      '\n',
      'a',
      'Z',
      '_',
      '0',
      '9',
      'e',
      '#',
      ';',
      '\u0000',
      '😀',
    ];
    for (let i = 0; i < edits; i++) {
      const at = this.int(s.length + 1);
      switch (this.int(5)) {
        case 0:
          s = s.slice(0, at) + this.pick(alphabet) + s.slice(at);
          break;
        case 1:
          s = s.slice(0, at) + s.slice(at + 1 + this.int(3));
          break;
        case 2: {
          const len = this.int(8);
          s = s.slice(0, at) + s.slice(at, at + len) + s.slice(at);
          break;
        }
        case 3:
          s = s.slice(0, at);
          break;
        default: {
          const words = s.split(' ');
          const a = this.int(words.length);
          const b = this.int(words.length);
          [words[a], words[b]] = [words[b]!, words[a]!];
          s = words.join(' ');
        }
      }
    }
    return s;
  }

  random(): string {
    const alphabet = 'abcdefnotinandorsortbylimitskip "\'()[],=!<>-.0123456789\\\t\n_';
    return Array.from({ length: this.int(40) }, () => alphabet[this.int(alphabet.length)]).join('');
  }

  sortParam(): string | undefined {
    if (!this.chance(0.3)) return undefined;
    return this.pick([
      'name ASC',
      'name asc, createdAt desc',
      'nope',
      'cost desc, id',
      'roleAttributes',
      'name,',
      ') or 1=1',
      'tags.env desc',
      'owner.name desc',
    ]);
  }
}

describe('fuzz', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await createDb();
  }, 120_000);
  afterAll(async () => {
    await db?.close();
  });

  /** Returns 'ok' | 'rejected', or throws with the offending filter. */
  async function check(input: ListQueryInput, entity = itemEntity): Promise<'ok' | 'rejected'> {
    let sql: ReturnType<typeof selectSql>;
    try {
      sql = selectSql(entity, buildListQuery(entity, input), `${entity.alias}.id`);
    } catch (err) {
      if (err instanceof ApiError && ACCEPTED.has(err.code)) return 'rejected';
      throw new Error(`unexpected error for ${JSON.stringify(input)}: ${String(err)}`);
    }
    try {
      await db.query(sql.text, sql.params);
      await db.query(sql.countText, sql.countParams);
    } catch (err) {
      throw new Error(`Postgres error for ${JSON.stringify(input)}: ${String(err)}\n${sql.text}`);
    }
    return 'ok';
  }

  it('generated filters translate and execute, or are rejected with INVALID_FILTER / INVALID_SORT_IDENTIFIER', async () => {
    const gen = new Gen(mulberry32(0x5eed));
    const stats = { ok: 0, rejected: 0 };
    for (let i = 0; i < 2500; i++) {
      const sort = gen.sortParam();
      stats[
        await check({ filter: gen.query(), limit: gen.pick([undefined, 5, -1, '0', '600']), ...(sort ? { sort } : {}) })
      ]++;
    }
    // Not vacuous: a good share of the generated filters is valid and really runs.
    expect(stats.ok).toBeGreaterThan(400);
    expect(stats.rejected).toBeGreaterThan(100);
  });

  it('mutated filters never produce any other error', async () => {
    const gen = new Gen(mulberry32(42));
    const stats = { ok: 0, rejected: 0 };
    for (let i = 0; i < 2500; i++) {
      stats[await check({ filter: gen.mutate(gen.query()) })]++;
    }
    expect(stats.ok).toBeGreaterThan(100);
  });

  it('random strings never produce any other error', async () => {
    const gen = new Gen(mulberry32(7));
    for (let i = 0; i < 1500; i++)
      await check({ filter: gen.random(), sort: gen.chance(0.2) ? gen.random() : undefined });
  });

  it('filters on the linked entity too', async () => {
    const gen = new Gen(mulberry32(99));
    for (let i = 0; i < 300; i++) {
      const filter = gen
        .query()
        .replace(/roleAttributes|link\.ids/g, 'roleAttributes')
        .replace(/policies/g, 'items');
      await check({ filter }, policyEntity);
    }
  });

  it('pathological sizes are rejected or handled', async () => {
    const big = Array.from({ length: 3000 }, (_, i) => `"v${i}"`).join(',');
    expect(await check({ filter: `name in [${big}]` })).toBe('ok');
    expect(await check({ filter: `name in [${big},${big},${big},${big}]` })).toBe('rejected');
    expect(await check({ filter: `${'('.repeat(5000)}true${')'.repeat(5000)}` })).toBe('rejected');
    expect(await check({ filter: 'not '.repeat(5000) + 'true' })).toBe('rejected');
    const chain = Array.from({ length: 2000 }, () => 'name = "x"').join(' or ');
    expect(await check({ filter: chain })).toBe('ok');
    const nested = 'isEmpty(from policies where isEmpty(from items where '.repeat(40) + 'true' + '))'.repeat(40);
    expect(await check({ filter: nested })).toBe('rejected');
    const nestedOk = 'isEmpty(from policies where isEmpty(from items where '.repeat(5) + 'true' + '))'.repeat(5);
    expect(await check({ filter: nestedOk })).toBe('ok');
  });
});
