/**
 * Recursive-descent parser for ZitiQL (ZITI-FACTS §4.2, storage `zitiql/ZitiQl.g4`).
 *
 * Precedence: `not` > `and` > `or`. Whitespace rules follow the reference grammar: `and`, `or`, `in`,
 * `between`, `sort by`, `skip`, `limit` and the operand after `not`/`contains`/`icontains` need
 * whitespace; `=`, `!=`, `<`… do not; a set function name is followed directly by `(`.
 */
import type {
  BoolExpr,
  CompareOp,
  DatetimeLiteral,
  Lhs,
  Literal,
  NumberLiteral,
  Query,
  SetExpr,
  SortField,
} from './ast.ts';
import { invalidFilter, syntaxErrorMessage } from './errors.ts';
import { positionOf, type Token, type TokenType, tokenize } from './lexer.ts';

/** Deepest nesting of parentheses / `not` / subqueries accepted (guards the stack, JS's and Postgres's). */
export const MAX_NESTING = 64;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Parses a complete ZitiQL query (filter with optional `sort by`, `skip`, `limit`).
 * Throws `ApiError('INVALID_FILTER')` on any syntax error.
 */
export function parseQuery(input: string): Query {
  const parser = new Parser(input);
  const query = parser.query();
  parser.expect('EOF');
  return query;
}

class Parser {
  private readonly tokens: Token[];
  private pos = 0;
  private depth = 0;

  constructor(private readonly input: string) {
    this.tokens = tokenize(input);
  }

  // ---- token helpers ---------------------------------------------------------------------------

  private peek(ahead = 0): Token {
    return this.tokens[Math.min(this.pos + ahead, this.tokens.length - 1)]!;
  }

  private is(type: TokenType): boolean {
    return this.peek().type === type;
  }

  private advance(): Token {
    const token = this.peek();
    if (token.type === 'ERROR') throw this.unexpected(token);
    if (token.type !== 'EOF') this.pos++;
    return token;
  }

  expect(type: TokenType): Token {
    const token = this.peek();
    if (token.type !== type) throw this.unexpected(token);
    return this.advance();
  }

  /** The grammar wants `WS+` before the next token. */
  private requireWs(): void {
    const token = this.peek();
    if (token.type === 'ERROR') throw this.unexpected(token);
    if (!token.wsBefore) throw this.unexpected(token);
  }

  /** The grammar wants no whitespace before the next token (`anyOf(`, `isEmpty(`…). */
  private expectAdjacent(type: TokenType): Token {
    const token = this.peek();
    if (token.type !== type || token.wsBefore) throw this.unexpected(token);
    return this.advance();
  }

  private unexpected(token: Token): Error {
    const { line, column } = positionOf(this.input, token.offset);
    return invalidFilter(syntaxErrorMessage(token.text, line, column));
  }

  private enter(): void {
    if (++this.depth > MAX_NESTING) throw invalidFilter(`filter nesting is deeper than ${MAX_NESTING} levels`);
  }

  private leave(): void {
    this.depth--;
  }

  // ---- query := boolExpr [sort by …] [skip N] [limit N|none] | sort by … | skip … | limit … ----------

  query(): Query {
    let filter: BoolExpr = { kind: 'const', value: true };
    let hasPrevious = false;
    if (!this.is('SORT') && !this.is('SKIP') && !this.is('LIMIT')) {
      filter = this.orExpr();
      hasPrevious = true;
    }
    let sort: SortField[] = [];
    let skip: number | undefined;
    let limit: number | undefined;
    if (this.is('SORT')) {
      if (hasPrevious) this.requireWs();
      sort = this.sortBy();
      hasPrevious = true;
    }
    if (this.is('SKIP')) {
      if (hasPrevious) this.requireWs();
      this.advance();
      this.requireWs();
      skip = this.integer(this.expect('NUMBER'));
      hasPrevious = true;
    }
    if (this.is('LIMIT')) {
      if (hasPrevious) this.requireWs();
      this.advance();
      this.requireWs();
      if (this.is('NONE')) {
        this.advance();
        limit = -1;
      } else {
        limit = this.integer(this.expect('NUMBER'));
      }
    }
    return {
      filter,
      sort,
      ...(skip === undefined ? {} : { skip }),
      ...(limit === undefined ? {} : { limit }),
    };
  }

  private sortBy(): SortField[] {
    this.expect('SORT');
    this.requireWs();
    this.expect('BY');
    this.requireWs();
    const fields: SortField[] = [this.sortField()];
    while (this.is('COMMA')) {
      this.advance();
      fields.push(this.sortField());
    }
    return fields;
  }

  private sortField(): SortField {
    const field = this.expect('IDENTIFIER').value!;
    if ((this.is('ASC') || this.is('DESC')) && this.peek().wsBefore) {
      return { field, direction: this.advance().type === 'ASC' ? 'asc' : 'desc' };
    }
    return { field, direction: 'asc' };
  }

  private integer(token: Token): number {
    if (!/^-?\d+$/.test(token.text)) throw invalidFilter(`invalid integer value: ${token.text}`);
    const value = BigInt(token.text);
    if (value < INT64_MIN || value > INT64_MAX) throw invalidFilter(`integer value out of range: ${token.text}`);
    return Number(value);
  }

  // ---- boolean expressions -----------------------------------------------------------------------

  private orExpr(): BoolExpr {
    const operands = [this.andExpr()];
    while (this.is('OR')) {
      this.requireWs();
      this.advance();
      this.requireWs();
      operands.push(this.andExpr());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'or', operands };
  }

  private andExpr(): BoolExpr {
    const operands = [this.notExpr()];
    while (this.is('AND')) {
      this.requireWs();
      this.advance();
      this.requireWs();
      operands.push(this.notExpr());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'and', operands };
  }

  private notExpr(): BoolExpr {
    if (!this.is('NOT')) return this.primary();
    this.advance();
    this.requireWs();
    this.enter();
    const operand = this.notExpr();
    this.leave();
    return { kind: 'not', operand };
  }

  private primary(): BoolExpr {
    const token = this.peek();
    switch (token.type) {
      case 'LPAREN': {
        this.advance();
        this.enter();
        const expr = this.orExpr();
        this.leave();
        this.expect('RPAREN');
        return expr;
      }
      case 'BOOL':
        this.advance();
        return { kind: 'const', value: token.text.toLowerCase() === 'true' };
      case 'ISEMPTY': {
        this.advance();
        this.expectAdjacent('LPAREN');
        const set = this.setExpr();
        this.expect('RPAREN');
        return { kind: 'isEmpty', set };
      }
      case 'IDENTIFIER': {
        this.advance();
        const name = token.value!;
        if (this.isOperator()) return this.operation({ kind: 'symbol', name });
        return { kind: 'symbol', name };
      }
      case 'ALL_OF':
      case 'ANY_OF': {
        this.advance();
        this.expectAdjacent('LPAREN');
        const name = this.expect('IDENTIFIER').value!;
        this.expect('RPAREN');
        return this.operation({ kind: token.type === 'ALL_OF' ? 'allOf' : 'anyOf', name });
      }
      case 'COUNT': {
        this.advance();
        this.expectAdjacent('LPAREN');
        const set = this.setExpr();
        this.expect('RPAREN');
        return this.operation({ kind: 'count', set });
      }
      default:
        throw this.unexpected(token);
    }
  }

  private isOperator(): boolean {
    const type = this.peek().type;
    return (
      type === 'IN' ||
      type === 'BETWEEN' ||
      type === 'LT' ||
      type === 'GT' ||
      type === 'EQ' ||
      type === 'CONTAINS' ||
      type === 'ICONTAINS'
    );
  }

  private setExpr(): SetExpr {
    if (this.is('IDENTIFIER')) return { kind: 'symbol', name: this.advance().value! };
    this.expect('FROM');
    this.requireWs();
    const from = this.expect('IDENTIFIER').value!;
    this.requireWs();
    this.expect('WHERE');
    this.requireWs();
    this.enter();
    const query = this.query();
    this.leave();
    return { kind: 'subquery', from, query };
  }

  private operation(lhs: Lhs): BoolExpr {
    const op = this.peek();
    switch (op.type) {
      case 'IN': {
        this.requireWs();
        this.advance();
        this.requireWs();
        return { kind: 'in', lhs, negated: op.negated === true, values: this.array() };
      }
      case 'BETWEEN': {
        this.requireWs();
        this.advance();
        this.requireWs();
        const first = this.peek();
        if (first.type !== 'NUMBER' && first.type !== 'DATETIME') throw this.unexpected(first);
        const lower = this.literal(this.advance());
        this.requireWs();
        this.expect('AND');
        this.requireWs();
        const upper = this.literal(this.expect(first.type));
        return { kind: 'between', lhs, negated: op.negated === true, lower, upper };
      }
      case 'LT':
      case 'GT':
      case 'EQ': {
        this.advance();
        const value = this.peek();
        const allowed: TokenType[] =
          op.type === 'EQ' ? ['STRING', 'NUMBER', 'DATETIME', 'BOOL', 'NULL'] : ['STRING', 'NUMBER', 'DATETIME'];
        if (!allowed.includes(value.type)) throw this.unexpected(value);
        return { kind: 'compare', lhs, op: op.text as CompareOp, value: this.literal(this.advance()) };
      }
      case 'CONTAINS':
      case 'ICONTAINS': {
        this.advance();
        this.requireWs();
        const value = this.peek();
        const ok = value.type === 'STRING' || (op.type === 'CONTAINS' && value.type === 'NUMBER');
        if (!ok) throw this.unexpected(value);
        return {
          kind: 'contains',
          lhs,
          negated: op.negated === true,
          ignoreCase: op.type === 'ICONTAINS',
          value: this.literal(this.advance()),
        };
      }
      default:
        throw this.unexpected(op);
    }
  }

  /** `[ v (, v)* ]` — non-empty, all strings, all numbers or all datetimes. */
  private array(): Literal[] {
    this.expect('LBRACKET');
    const first = this.peek();
    if (first.type !== 'STRING' && first.type !== 'NUMBER' && first.type !== 'DATETIME') {
      throw this.unexpected(first);
    }
    const values = [this.literal(this.advance())];
    while (this.is('COMMA')) {
      this.advance();
      values.push(this.literal(this.expect(first.type)));
    }
    this.expect('RBRACKET');
    return values;
  }

  private literal(token: Token): Literal {
    switch (token.type) {
      case 'STRING':
        return { type: 'string', value: token.value! };
      case 'NUMBER':
        return numberLiteral(token.text);
      case 'DATETIME':
        return datetimeLiteral(token.value!);
      case 'BOOL':
        return { type: 'bool', value: token.text.toLowerCase() === 'true' };
      case 'NULL':
        return { type: 'null' };
      default:
        throw this.unexpected(token);
    }
  }
}

/** Go semantics: ParseInt first (int64), else ParseFloat (float64; ±Inf is an error). */
export function numberLiteral(text: string): NumberLiteral {
  if (/^-?\d+$/.test(text)) {
    const big = BigInt(text);
    if (big >= INT64_MIN && big <= INT64_MAX)
      return { type: 'number', value: Number(big), isInt: true, text: big.toString() };
  }
  const value = Number(text);
  if (!Number.isFinite(value)) throw invalidFilter(`number out of range: ${text}`);
  return { type: 'number', value, isInt: false, text: String(value === 0 ? 0 : value) };
}

const DATETIME_PARTS = /^(\d+)-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:[Zz]|([+-])(\d\d):(\d\d))$/;

/** Validates like Go's `time.Parse(time.RFC3339, …)`: 4-digit year, real calendar day, seconds < 60. */
export function datetimeLiteral(text: string): DatetimeLiteral {
  const m = DATETIME_PARTS.exec(text);
  if (!m) throw invalidFilter(`invalid datetime: ${text}`);
  const [, y, mo, d, h, mi, s, frac = '', sign, oh = '0', om = '0'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const second = Number(s);
  if (y!.length !== 4) throw invalidFilter(`invalid datetime: ${text}: year must have 4 digits`);
  if (second > 59) throw invalidFilter(`invalid datetime: ${text}: second out of range`);
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const daysIn = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  if (day > daysIn) throw invalidFilter(`invalid datetime: ${text}: day out of range`);
  const digits = `${frac}000000`.slice(0, 6);
  const ms = Number(digits.slice(0, 3));
  const micros = Number(digits.slice(3, 6));
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(Number(h), Number(mi), second, ms);
  const offsetMinutes = sign ? (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) : 0;
  const value = new Date(date.getTime() - offsetMinutes * 60_000);
  return { type: 'datetime', value, micros, text };
}
