import { ApiError } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import type { BoolExpr, Query } from '../src/ast.ts';
import { MAX_NESTING, parseQuery, tokenize } from '../src/index.ts';

const filterOf = (q: string): BoolExpr => parseQuery(q).filter;

/** Asserts an INVALID_FILTER syntax error and returns its cause message. */
function syntaxError(q: string): string {
  try {
    parseQuery(q);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    const apiError = err as ApiError;
    expect(apiError.code).toBe('INVALID_FILTER');
    expect(apiError.cause).toMatchObject({ code: 'UNHANDLED' });
    return (apiError.cause as { message: string }).message;
  }
  throw new Error(`expected a syntax error for ${JSON.stringify(q)}`);
}

const unexpected = (symbol: string, line: number, column: number): string =>
  `Unexpected symbol: "${symbol}" at line: ${line} column: ${column}. line: ${line}, column: ${column}, symbol: ${symbol}`;

describe('the 22 real filters of ZITI-FACTS §4.3', () => {
  const real: Array<[string, (q: Query) => void]> = [
    [
      'name="my-service"',
      (q) =>
        expect(q.filter).toEqual({
          kind: 'compare',
          lhs: { kind: 'symbol', name: 'name' },
          op: '=',
          value: { type: 'string', value: 'my-service' },
        }),
    ],
    ['id = "Ke3xy" or name="Ke3xy"', (q) => expect(q.filter).toMatchObject({ kind: 'or', operands: [{}, {}] })],
    ['id="Ke3xy"', (q) => expect(q.filter).toMatchObject({ kind: 'compare', op: '=' })],
    ['identity="Ke3xy" and method="updb"', (q) => expect(q.filter).toMatchObject({ kind: 'and' })],
    ['method="updb"', (q) => expect(q.filter).toMatchObject({ lhs: { name: 'method' } })],
    [
      'true skip 10 limit 2',
      (q) => expect(q).toEqual({ filter: { kind: 'const', value: true }, sort: [], skip: 10, limit: 2 }),
    ],
    [
      'sort by name limit none',
      (q) =>
        expect(q).toEqual({
          filter: { kind: 'const', value: true },
          sort: [{ field: 'name', direction: 'asc' }],
          limit: -1,
        }),
    ],
    ['limit none', (q) => expect(q).toEqual({ filter: { kind: 'const', value: true }, sort: [], limit: -1 })],
    [
      '(name contains "web")',
      (q) =>
        expect(q.filter).toEqual({
          kind: 'contains',
          lhs: { kind: 'symbol', name: 'name' },
          negated: false,
          ignoreCase: false,
          value: { type: 'string', value: 'web' },
        }),
    ],
    [
      'anyOf(roleAttributes)="demo"',
      (q) => expect(q.filter).toMatchObject({ kind: 'compare', lhs: { kind: 'anyOf', name: 'roleAttributes' } }),
    ],
    ['router.name="er1"', (q) => expect(q.filter).toMatchObject({ lhs: { kind: 'symbol', name: 'router.name' } })],
    ['type="Router"', (q) => expect(q.filter).toMatchObject({ value: { type: 'string', value: 'Router' } })],
    [
      'id in ["a","b","c"]',
      (q) =>
        expect(q.filter).toEqual({
          kind: 'in',
          lhs: { kind: 'symbol', name: 'id' },
          negated: false,
          values: [
            { type: 'string', value: 'a' },
            { type: 'string', value: 'b' },
            { type: 'string', value: 'c' },
          ],
        }),
    ],
    [
      'id contains "e" and id contains "abc" sort by id',
      (q) => {
        expect(q.filter).toMatchObject({ kind: 'and', operands: [{ kind: 'contains' }, { kind: 'contains' }] });
        expect(q.sort).toEqual([{ field: 'id', direction: 'asc' }]);
      },
    ],
    [
      'isVerified = true and not isEmpty(from edgeRouterPolicies where anyOf(identities) = "id1")',
      (q) =>
        expect(q.filter).toEqual({
          kind: 'and',
          operands: [
            {
              kind: 'compare',
              lhs: { kind: 'symbol', name: 'isVerified' },
              op: '=',
              value: { type: 'bool', value: true },
            },
            {
              kind: 'not',
              operand: {
                kind: 'isEmpty',
                set: {
                  kind: 'subquery',
                  from: 'edgeRouterPolicies',
                  query: {
                    filter: {
                      kind: 'compare',
                      lhs: { kind: 'anyOf', name: 'identities' },
                      op: '=',
                      value: { type: 'string', value: 'id1' },
                    },
                    sort: [],
                  },
                },
              },
            },
          ],
        }),
    ],
    [
      'not isEmpty(from servicePolicies where anyOf(identities) = "id1" and type = 1)',
      (q) =>
        expect(q.filter).toMatchObject({
          kind: 'not',
          operand: { kind: 'isEmpty', set: { kind: 'subquery', query: { filter: { kind: 'and' } } } },
        }),
    ],
    [
      'anyOf(identities) = "id1" and anyOf(services) = "svc" SORT BY connected DESC LIMIT 25',
      (q) => {
        expect(q.sort).toEqual([{ field: 'connected', direction: 'desc' }]);
        expect(q.limit).toBe(25);
      },
    ],
    [
      'lastActivityAt < datetime(2024-08-21T14:00:00Z) limit 500',
      (q) => {
        expect(q.filter).toMatchObject({ kind: 'compare', op: '<', value: { type: 'datetime' } });
        expect((q.filter as { value: { value: Date } }).value.value.toISOString()).toBe('2024-08-21T14:00:00.000Z');
        expect(q.limit).toBe(500);
      },
    ],
    ['isDefaultAdmin = true', (q) => expect(q.filter).toMatchObject({ value: { type: 'bool', value: true } })],
    ['identity = "id1" limit 1', (q) => expect(q.limit).toBe(1)],
    [
      'firstName in ["Alice", "Bob"] SORT BY lastName desc, firstName skip 10 limit 10',
      (q) => {
        expect(q.sort).toEqual([
          { field: 'lastName', direction: 'desc' },
          { field: 'firstName', direction: 'asc' },
        ]);
        expect(q.skip).toBe(10);
        expect(q.limit).toBe(10);
      },
    ],
    ['a between 1 and 4', (q) => expect(q.filter).toMatchObject({ kind: 'between', negated: false })],
    ['a not between 0 and 1', (q) => expect(q.filter).toMatchObject({ kind: 'between', negated: true })],
    [
      'anyOf(link.ids) between 100 and 110',
      (q) => expect(q.filter).toMatchObject({ kind: 'between', lhs: { kind: 'anyOf', name: 'link.ids' } }),
    ],
    [
      'allOf(link.ids) < 500',
      (q) => expect(q.filter).toMatchObject({ kind: 'compare', op: '<', lhs: { kind: 'allOf', name: 'link.ids' } }),
    ],
    ['a != null', (q) => expect(q.filter).toMatchObject({ op: '!=', value: { type: 'null' } })],
    ['a = null', (q) => expect(q.filter).toMatchObject({ op: '=', value: { type: 'null' } })],
    ['s icontains "HELLO"', (q) => expect(q.filter).toMatchObject({ kind: 'contains', ignoreCase: true })],
    [
      'nci not contains 234',
      (q) =>
        expect(q.filter).toMatchObject({
          kind: 'contains',
          negated: true,
          ignoreCase: false,
          value: { type: 'number', value: 234, isInt: true },
        }),
    ],
    [
      '(a = 1 and b = 0) or (c = 2.5 and d = datetime(2032-09-03T15:36:50Z))',
      (q) =>
        expect(q.filter).toMatchObject({
          kind: 'or',
          operands: [
            { kind: 'and' },
            { kind: 'and', operands: [{ value: { type: 'number', value: 2.5, isInt: false } }, {}] },
          ],
        }),
    ],
    ['tags.age >= 90', (q) => expect(q.filter).toMatchObject({ op: '>=', lhs: { name: 'tags.age' } })],
  ];

  it.each(real)('parses %s', (source, check) => {
    check(parseQuery(source));
  });
});

describe('operators', () => {
  it.each(['=', '!=', '<', '<=', '>', '>='] as const)('%s with and without whitespace', (op) => {
    const expected = {
      kind: 'compare',
      lhs: { kind: 'symbol', name: 'a' },
      op,
      value: { type: 'number', value: 1, isInt: true, text: '1' },
    };
    expect(filterOf(`a${op}1`)).toEqual(expected);
    expect(filterOf(`a ${op} 1`)).toEqual(expected);
    expect(filterOf(`a\t${op}\n1`)).toEqual(expected);
  });

  it('= and != accept string, number, datetime, bool and null; < > only string, number, datetime', () => {
    for (const v of ['"x"', '1', 'datetime(2020-01-01T00:00:00Z)', 'true', 'false', 'null']) {
      expect(filterOf(`a = ${v}`).kind).toBe('compare');
      expect(filterOf(`a != ${v}`).kind).toBe('compare');
    }
    for (const v of ['"x"', '1', 'datetime(2020-01-01T00:00:00Z)']) expect(filterOf(`a < ${v}`).kind).toBe('compare');
    expect(syntaxError('a < true')).toBe(unexpected('true', 1, 4));
    expect(syntaxError('a >= null')).toBe(unexpected('null', 1, 5));
  });

  it('in / not in with string, number and datetime arrays', () => {
    expect(filterOf('a in ["x", "y"]')).toMatchObject({
      kind: 'in',
      negated: false,
      values: [{ value: 'x' }, { value: 'y' }],
    });
    expect(filterOf('a not in [1,2.5,-3]')).toMatchObject({
      kind: 'in',
      negated: true,
      values: [{ value: 1 }, { value: 2.5 }, { value: -3 }],
    });
    expect(filterOf('a in [ datetime(2020-01-01T00:00:00Z) , datetime(2021-01-01T00:00:00Z) ]')).toMatchObject({
      values: [{ type: 'datetime' }, { type: 'datetime' }],
    });
    expect(filterOf('a NOT IN ["x"]')).toMatchObject({ kind: 'in', negated: true });
  });

  it('arrays are homogeneous and never empty', () => {
    expect(syntaxError('a in []')).toBe(unexpected(']', 1, 6));
    expect(syntaxError('a in ["x", 1]')).toBe(unexpected('1', 1, 11));
    expect(syntaxError('a in [true]')).toBe(unexpected('true', 1, 6));
    expect(syntaxError('a in ["x",]')).toBe(unexpected(']', 1, 10));
  });

  it('between / not between with numbers or datetimes of one kind', () => {
    expect(filterOf('a between 1 and 4')).toMatchObject({ kind: 'between', lower: { value: 1 }, upper: { value: 4 } });
    expect(filterOf('a not   between datetime(2020-01-01T00:00:00Z) and datetime(2021-01-01T00:00:00Z)')).toMatchObject(
      {
        kind: 'between',
        negated: true,
        lower: { type: 'datetime' },
      },
    );
    expect(syntaxError('a between 1 and datetime(2021-01-01T00:00:00Z)')).toBe(
      unexpected('datetime(2021-01-01T00:00:00Z)', 1, 16),
    );
    expect(syntaxError('a between "x" and "y"')).toBe(unexpected('"x"', 1, 10));
  });

  it('contains / not contains (string or number) and icontains / not icontains (string)', () => {
    expect(filterOf('a contains "x"')).toMatchObject({ kind: 'contains', negated: false, ignoreCase: false });
    expect(filterOf('a contains 12')).toMatchObject({ value: { type: 'number', value: 12 } });
    expect(filterOf('a not  contains "x"')).toMatchObject({ negated: true, ignoreCase: false });
    expect(filterOf('a icontains "x"')).toMatchObject({ negated: false, ignoreCase: true });
    expect(filterOf('a NOT ICONTAINS "x"')).toMatchObject({ negated: true, ignoreCase: true });
    expect(filterOf('anyOf(a)contains "x"')).toMatchObject({ lhs: { kind: 'anyOf' } });
    expect(syntaxError('a icontains 12')).toBe(unexpected('12', 1, 12));
    expect(syntaxError('a contains"x"')).toBe(unexpected('"x"', 1, 10));
  });

  it('set functions: anyOf, allOf, count, isEmpty, from … where subqueries', () => {
    expect(filterOf('allOf(x) = "y"')).toMatchObject({ lhs: { kind: 'allOf', name: 'x' } });
    expect(filterOf('anyOf( x ) != "y"')).toMatchObject({ lhs: { kind: 'anyOf', name: 'x' }, op: '!=' });
    expect(filterOf('count(x) > 2')).toMatchObject({ lhs: { kind: 'count', set: { kind: 'symbol', name: 'x' } } });
    expect(filterOf('count(from p where true) = 0')).toMatchObject({
      lhs: { kind: 'count', set: { kind: 'subquery', from: 'p', query: { filter: { kind: 'const', value: true } } } },
    });
    expect(filterOf('isEmpty(x)')).toEqual({ kind: 'isEmpty', set: { kind: 'symbol', name: 'x' } });
    expect(filterOf('isEmpty(from p where isEmpty(from q where a = 1 sort by a desc skip 1 limit 2))')).toMatchObject({
      set: {
        query: {
          filter: {
            kind: 'isEmpty',
            set: { kind: 'subquery', from: 'q', query: { sort: [{ direction: 'desc' }], skip: 1, limit: 2 } },
          },
        },
      },
    });
    expect(filterOf('ANYOF(x) = "y" and ALLOF(y) = "z" and COUNT(z) = 1 and ISEMPTY(w)').kind).toBe('and');
    // A set function name is directly followed by '('; allOf/anyOf take only an identifier.
    expect(syntaxError('anyOf (x) = "y"')).toBe(unexpected('(', 1, 6));
    expect(syntaxError('isEmpty (x)')).toBe(unexpected('(', 1, 8));
    expect(syntaxError('anyOf(from p where true) = 1')).toBe(unexpected('from', 1, 6));
    expect(syntaxError('count(x)')).toBe(unexpected('<EOF>', 1, 8));
  });

  it('bare boolean symbols and constants', () => {
    expect(filterOf('isAdmin')).toEqual({ kind: 'symbol', name: 'isAdmin' });
    expect(filterOf('TRUE')).toEqual({ kind: 'const', value: true });
    expect(filterOf('False')).toEqual({ kind: 'const', value: false });
    expect(filterOf('isAdmin and not disabled')).toEqual({
      kind: 'and',
      operands: [
        { kind: 'symbol', name: 'isAdmin' },
        { kind: 'not', operand: { kind: 'symbol', name: 'disabled' } },
      ],
    });
  });

  it('precedence: not > and > or, parentheses group', () => {
    const a = { kind: 'symbol', name: 'a' };
    const b = { kind: 'symbol', name: 'b' };
    const c = { kind: 'symbol', name: 'c' };
    expect(filterOf('a or b and c')).toEqual({ kind: 'or', operands: [a, { kind: 'and', operands: [b, c] }] });
    expect(filterOf('a and b or c')).toEqual({ kind: 'or', operands: [{ kind: 'and', operands: [a, b] }, c] });
    expect(filterOf('not a and b')).toEqual({ kind: 'and', operands: [{ kind: 'not', operand: a }, b] });
    expect(filterOf('not a or b')).toEqual({ kind: 'or', operands: [{ kind: 'not', operand: a }, b] });
    expect(filterOf('not not a')).toEqual({ kind: 'not', operand: { kind: 'not', operand: a } });
    expect(filterOf('(a or b) and c')).toEqual({ kind: 'and', operands: [{ kind: 'or', operands: [a, b] }, c] });
    expect(filterOf('not (a or b)')).toEqual({ kind: 'not', operand: { kind: 'or', operands: [a, b] } });
    expect(filterOf('a and b and c')).toEqual({ kind: 'and', operands: [a, b, c] });
    expect(filterOf('( ( a ) )')).toEqual(a);
  });
});

describe('lexical rules', () => {
  it('keywords are case-insensitive, identifiers are case-sensitive', () => {
    expect(parseQuery('Name = "x" AnD b In ["y"] Or c NOT IN [1] sOrT bY Name DeSc SkIp 1 LiMiT NoNe')).toMatchObject({
      filter: { kind: 'or' },
      sort: [{ field: 'Name', direction: 'desc' }],
      skip: 1,
      limit: -1,
    });
  });

  it("names of Object.prototype's members are identifiers like any other word", () => {
    for (const name of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(filterOf(`${name} = "x"`)).toMatchObject({ lhs: { name } });
    }
  });

  it('identifiers: dotted segments of letters and underscores, optionally single-quoted', () => {
    expect(filterOf('tags.my_env = "x"')).toMatchObject({ lhs: { name: 'tags.my_env' } });
    expect(filterOf('\'tags.env\' = "x"')).toMatchObject({ lhs: { name: 'tags.env' } });
    // A keyword can be used as a symbol when quoted.
    expect(filterOf("'count' = 1")).toMatchObject({ lhs: { name: 'count' } });
    // Longest match: `android` is an identifier, not `and`.
    expect(filterOf('android = 1')).toMatchObject({ lhs: { name: 'android' } });
    expect(syntaxError('tags.env2 = "x"')).toBe(unexpected('2', 1, 8));
    expect(syntaxError('_a = 1')).toBe(unexpected('_', 1, 0));
    expect(syntaxError('a. = 1')).toBe(unexpected('.', 1, 1));
    expect(syntaxError("'a = 1")).toBe(unexpected("'", 1, 0));
  });

  it('strings: double quotes with escapes, no control characters', () => {
    expect(filterOf('a = "q\\"b\\\\s\\f\\n\\r\\t"')).toMatchObject({ value: { value: 'q"b\\s\f\n\r\t' } });
    expect(filterOf('a = ""')).toMatchObject({ value: { value: '' } });
    expect(filterOf('a = "üñí 😀 \' ; --"')).toMatchObject({ value: { value: "üñí 😀 ' ; --" } });
    expect(syntaxError('a = "x\\u0041"')).toBe(unexpected('"x\\u', 1, 4));
    expect(syntaxError('a = "tab\there"')).toBe(unexpected('"tab\t', 1, 4));
    expect(syntaxError('a = "open')).toBe(unexpected('"open', 1, 4));
    // Single quotes make an identifier, not a string.
    expect(syntaxError("a = 'x'")).toBe(unexpected("'x'", 1, 4));
  });

  it('numbers: int, float, exponent, negative; int64 overflow becomes a float', () => {
    const n = (src: string) => (filterOf(`a = ${src}`) as { value: unknown }).value;
    expect(n('0')).toEqual({ type: 'number', value: 0, isInt: true, text: '0' });
    expect(n('-42')).toEqual({ type: 'number', value: -42, isInt: true, text: '-42' });
    expect(n('2.50')).toEqual({ type: 'number', value: 2.5, isInt: false, text: '2.5' });
    expect(n('1e3')).toEqual({ type: 'number', value: 1000, isInt: false, text: '1000' });
    expect(n('-1.5E-2')).toEqual({ type: 'number', value: -0.015, isInt: false, text: '-0.015' });
    expect(n('9223372036854775807')).toMatchObject({ isInt: true, text: '9223372036854775807' });
    expect(n('9223372036854775808')).toMatchObject({ isInt: false });
    expect(syntaxError('a = 01')).toBe(unexpected('1', 1, 5));
    expect(syntaxError('a = 1.')).toBe(unexpected('.', 1, 5));
    expect(syntaxError('a = - 1')).toBe(unexpected('-', 1, 4));
    expect(() => parseQuery('a = 1e999')).toThrow(ApiError);
  });

  it('datetime(RFC3339): fraction, offsets, lower-case t/z, inner whitespace; calendar validated', () => {
    const d = (src: string) => (filterOf(`a = ${src}`) as { value: { value: Date; micros: number } }).value;
    expect(d('datetime(2024-08-21T14:00:00Z)').value.toISOString()).toBe('2024-08-21T14:00:00.000Z');
    expect(d('datetime( 2024-08-21t14:00:00.123456789+02:30 )').value.toISOString()).toBe('2024-08-21T11:30:00.123Z');
    expect(d('datetime(2024-08-21T14:00:00.123456Z)').micros).toBe(456);
    expect(d('datetime(2024-02-29T00:00:00z)').value.toISOString()).toBe('2024-02-29T00:00:00.000Z');
    expect(() => parseQuery('a = datetime(2023-02-29T00:00:00Z)')).toThrow(ApiError);
    expect(() => parseQuery('a = datetime(2023-01-01T00:00:60Z)')).toThrow(ApiError);
    expect(() => parseQuery('a = datetime(20230-01-01T00:00:00Z)')).toThrow(ApiError);
    // Not a datetime token: the lexer falls back to the identifier `datetime`.
    expect(syntaxError('a = datetime(2023-13-01T00:00:00Z)')).toBe(unexpected('datetime', 1, 4));
    expect(syntaxError('a = DATETIME(2023-01-01T00:00:00Z)')).toBe(unexpected('DATETIME', 1, 4));
    // A bare timestamp is a token no rule accepts.
    expect(syntaxError('a = 2023-01-01T00:00:00Z')).toBe(unexpected('2023-01-01T00:00:00Z', 1, 4));
  });

  it('tokenizer marks whitespace and folds `not` into in/contains/between', () => {
    const types = tokenize('a not in [1] and b not  contains "x"').map((t) => `${t.type}${t.negated ? '!' : ''}`);
    expect(types).toEqual([
      'IDENTIFIER',
      'IN!',
      'LBRACKET',
      'NUMBER',
      'RBRACKET',
      'AND',
      'IDENTIFIER',
      'CONTAINS!',
      'STRING',
      'EOF',
    ]);
  });
});

describe('whitespace rules of the grammar', () => {
  it('and/or need whitespace on both sides', () => {
    expect(syntaxError('a="x"and b=1')).toBe(unexpected('and', 1, 5));
    expect(syntaxError('(a=1)or(b=1)')).toBe(unexpected('or', 1, 5));
    expect(syntaxError('a=1 and(b=1)')).toBe(unexpected('(', 1, 7));
  });

  it('not needs whitespace before its operand', () => {
    expect(syntaxError('not(a=1)')).toBe(unexpected('(', 1, 3));
    expect(filterOf('not (a=1)')).toMatchObject({ kind: 'not' });
  });

  it('`not in` allows exactly one whitespace character', () => {
    expect(syntaxError('a not  in [1]')).toBe(unexpected('not', 1, 2));
    expect(filterOf('a not\tin [1]')).toMatchObject({ kind: 'in', negated: true });
  });

  it('in/between need whitespace after them; sort/skip/limit need whitespace before them', () => {
    expect(syntaxError('a in[1]')).toBe(unexpected('[', 1, 4));
    expect(syntaxError('a="x"sort by a')).toBe(unexpected('sort', 1, 5));
    expect(syntaxError('true limit 1 skip 1')).toBe(unexpected('skip', 1, 13));
    expect(syntaxError('sort by a,')).toBe(unexpected('<EOF>', 1, 10));
    expect(parseQuery('sort by a ,b desc,c')).toMatchObject({
      sort: [{ field: 'a' }, { field: 'b', direction: 'desc' }, { field: 'c', direction: 'asc' }],
    });
  });
});

describe('syntax errors', () => {
  it('use the reference message with 1-based line and 0-based column', () => {
    expect(syntaxError('name = x')).toBe(unexpected('x', 1, 7));
    expect(syntaxError('name = "a" and\n  foo bar')).toBe(unexpected('bar', 2, 6));
    expect(syntaxError('name = "a" #')).toBe(unexpected('#', 1, 11));
    expect(syntaxError('name = "a" ! "b"')).toBe(unexpected('!', 1, 11));
    expect(syntaxError('')).toBe(unexpected('<EOF>', 1, 0));
    expect(syntaxError('(a = 1')).toBe(unexpected('<EOF>', 1, 6));
    expect(syntaxError('a = 1)')).toBe(unexpected(')', 1, 5));
    expect(syntaxError('a is null')).toBe(unexpected('is', 1, 2));
    expect(syntaxError('a <> 1')).toBe(unexpected('>', 1, 3));
    expect(syntaxError('a like "x"')).toBe(unexpected('like', 1, 2));
    expect(syntaxError('limit 1.5')).toBe('invalid integer value: 1.5');
    expect(syntaxError('skip 99999999999999999999')).toBe('integer value out of range: 99999999999999999999');
  });

  it('the earliest error wins even if a later character cannot be tokenized', () => {
    expect(syntaxError('a = = #')).toBe(unexpected('=', 1, 4));
  });

  it('bounds nesting depth', () => {
    const deep = `${'('.repeat(MAX_NESTING + 1)}a${')'.repeat(MAX_NESTING + 1)}`;
    expect(syntaxError(deep)).toMatch(/nesting/);
    const ok = `${'('.repeat(MAX_NESTING)}a${')'.repeat(MAX_NESTING)}`;
    expect(filterOf(ok)).toEqual({ kind: 'symbol', name: 'a' });
    expect(syntaxError('not '.repeat(MAX_NESTING + 1) + 'a')).toMatch(/nesting/);
  });
});
