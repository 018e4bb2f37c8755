/**
 * ZitiQL lexer: maximal munch over the token rules of the reference grammar (storage `zitiql/ZitiQl.g4`),
 * ties going to the rule defined first (keywords before IDENTIFIER), exactly like the ANTLR lexer.
 * Whitespace is not emitted as tokens; each token records whether whitespace preceded it so the parser
 * can enforce the grammar's `WS+` requirements. A character no rule accepts yields one ERROR token and
 * ends the stream (the parser reports it when it gets there, so earlier syntax errors win).
 */

export type TokenType =
  | 'LPAREN'
  | 'RPAREN'
  | 'LBRACKET'
  | 'RBRACKET'
  | 'COMMA'
  | 'AND'
  | 'OR'
  | 'LT'
  | 'GT'
  | 'EQ'
  | 'CONTAINS'
  | 'ICONTAINS'
  | 'IN'
  | 'BETWEEN'
  | 'BOOL'
  | 'DATETIME'
  | 'ALL_OF'
  | 'ANY_OF'
  | 'COUNT'
  | 'ISEMPTY'
  | 'STRING'
  | 'NUMBER'
  | 'NULL'
  | 'NOT'
  | 'ASC'
  | 'DESC'
  | 'SORT'
  | 'BY'
  | 'SKIP'
  | 'LIMIT'
  | 'NONE'
  | 'WHERE'
  | 'FROM'
  | 'IDENTIFIER'
  /** A bare RFC3339 timestamp outside `datetime(…)`: a token of the grammar no parser rule accepts. */
  | 'RFC3339'
  | 'EOF'
  | 'ERROR';

export interface Token {
  readonly type: TokenType;
  /** The source text of the token (for ERROR: the text that could not be tokenized). */
  readonly text: string;
  /** Offset in the input (UTF-16 units). */
  readonly offset: number;
  /** Whether at least one whitespace character directly precedes the token. */
  readonly wsBefore: boolean;
  /** Decoded value: string content for STRING, the name for IDENTIFIER, the inner timestamp for DATETIME. */
  readonly value?: string;
  /** For CONTAINS / ICONTAINS / IN / BETWEEN: whether the token carries the `not` prefix. */
  readonly negated?: boolean;
}

const KEYWORDS: Readonly<Record<string, TokenType>> = {
  and: 'AND',
  or: 'OR',
  contains: 'CONTAINS',
  icontains: 'ICONTAINS',
  in: 'IN',
  between: 'BETWEEN',
  true: 'BOOL',
  false: 'BOOL',
  allof: 'ALL_OF',
  anyof: 'ANY_OF',
  count: 'COUNT',
  isempty: 'ISEMPTY',
  null: 'NULL',
  not: 'NOT',
  asc: 'ASC',
  desc: 'DESC',
  sort: 'SORT',
  by: 'BY',
  skip: 'SKIP',
  limit: 'LIMIT',
  none: 'NONE',
  where: 'WHERE',
  from: 'FROM',
};

const WS = ' \t\r\n';
const isWs = (c: string | undefined): boolean => c !== undefined && c.length === 1 && WS.includes(c);
const isLetter = (c: string | undefined): boolean => c !== undefined && /^[A-Za-z]$/.test(c);
const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

const IDENT_RE = /[A-Za-z][A-Za-z_]*(?:\.[A-Za-z][A-Za-z_]*)*/y;
const LETTERS_RE = /[A-Za-z]+/y;
const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?(?:0|[1-9][0-9]*))?/y;
const RFC3339_SRC =
  '[0-9]+-(?:0[1-9]|1[012])-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])';
const RFC3339_RE = new RegExp(RFC3339_SRC, 'y');
const DATETIME_RE = new RegExp(`datetime\\([ \\t\\r\\n]*(${RFC3339_SRC})[ \\t\\r\\n]*\\)`, 'y');
const NOT_COMPOUND: ReadonlyArray<readonly [RegExp, TokenType]> = [
  [/not[ \t\r\n]+contains/iy, 'CONTAINS'],
  [/not[ \t\r\n]+icontains/iy, 'ICONTAINS'],
  // Exactly one whitespace character: the reference's `IN: (N O T WS)? I N`.
  [/not[ \t\r\n]in/iy, 'IN'],
  [/not[ \t\r\n]+between/iy, 'BETWEEN'],
];

const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', f: '\f', n: '\n', r: '\r', t: '\t' };

function matchAt(re: RegExp, input: string, pos: number): RegExpExecArray | null {
  re.lastIndex = pos;
  return re.exec(input);
}

export function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  let wsBefore = false;
  const push = (type: TokenType, text: string, extra?: { value?: string; negated?: boolean }): void => {
    tokens.push({ type, text, offset: pos, wsBefore, ...extra });
    pos += text.length;
    wsBefore = false;
  };

  while (pos < input.length) {
    const c = input[pos]!;
    if (isWs(c)) {
      wsBefore = true;
      pos++;
      continue;
    }
    switch (c) {
      case '(':
        push('LPAREN', c);
        continue;
      case ')':
        push('RPAREN', c);
        continue;
      case '[':
        push('LBRACKET', c);
        continue;
      case ']':
        push('RBRACKET', c);
        continue;
      case ',':
        push('COMMA', c);
        continue;
      case '<':
      case '>': {
        const text = input[pos + 1] === '=' ? `${c}=` : c;
        push(c === '<' ? 'LT' : 'GT', text);
        continue;
      }
      case '=':
        push('EQ', '=');
        continue;
      case '!':
        if (input[pos + 1] === '=') {
          push('EQ', '!=');
          continue;
        }
        push('ERROR', '!');
        return finish(tokens, input);
      case '"': {
        const str = lexString(input, pos);
        if (str.error) {
          push('ERROR', input.slice(pos, str.end));
          return finish(tokens, input);
        }
        push('STRING', input.slice(pos, str.end), { value: str.value });
        continue;
      }
      case "'": {
        const m = matchAt(IDENT_RE, input, pos + 1);
        if (m && input[pos + 1 + m[0].length] === "'") {
          push('IDENTIFIER', input.slice(pos, pos + m[0].length + 2), { value: m[0] });
          continue;
        }
        push('ERROR', "'");
        return finish(tokens, input);
      }
    }

    if (c === '-' || isDigit(c)) {
      const num = matchAt(NUMBER_RE, input, pos);
      const ts = isDigit(c) ? matchAt(RFC3339_RE, input, pos) : null;
      if (ts && ts[0].length > (num?.[0].length ?? 0)) {
        push('RFC3339', ts[0]);
        continue;
      }
      if (num) {
        push('NUMBER', num[0]);
        continue;
      }
      push('ERROR', c);
      return finish(tokens, input);
    }

    if (isLetter(c)) {
      const ident = matchAt(IDENT_RE, input, pos)![0];
      let best: { type: TokenType; text: string; extra?: { value?: string; negated?: boolean } } = {
        type: 'IDENTIFIER',
        text: ident,
        extra: { value: ident },
      };
      // Keywords are defined before IDENTIFIER: they win ties.
      const word = matchAt(LETTERS_RE, input, pos)![0];
      // Own keys only: `constructor`, `toString`… are identifiers, not Object.prototype's members.
      const lower = word.toLowerCase();
      const keyword = Object.hasOwn(KEYWORDS, lower) ? KEYWORDS[lower] : undefined;
      if (keyword && word.length >= best.text.length) {
        best = { type: keyword, text: word, extra: negatable(keyword) ? { negated: false } : {} };
      }
      for (const [re, type] of NOT_COMPOUND) {
        const m = matchAt(re, input, pos);
        if (m && m[0].length > best.text.length) best = { type, text: m[0], extra: { negated: true } };
      }
      const dt = matchAt(DATETIME_RE, input, pos);
      if (dt && dt[0].length > best.text.length) best = { type: 'DATETIME', text: dt[0], extra: { value: dt[1]! } };
      push(best.type, best.text, best.extra);
      continue;
    }

    push('ERROR', String.fromCodePoint(input.codePointAt(pos)!));
    return finish(tokens, input);
  }
  tokens.push({ type: 'EOF', text: '<EOF>', offset: input.length, wsBefore });
  return tokens;
}

function negatable(type: TokenType): boolean {
  return type === 'CONTAINS' || type === 'ICONTAINS' || type === 'IN' || type === 'BETWEEN';
}

/** After an ERROR token the stream ends; an EOF keeps the parser's lookahead total. */
function finish(tokens: Token[], input: string): Token[] {
  tokens.push({ type: 'EOF', text: '<EOF>', offset: input.length, wsBefore: false });
  return tokens;
}

/** `"…"` with the escapes `\" \\ \f \n \r \t`; no control characters (U+0000–U+001F). */
function lexString(input: string, start: number): { value: string; end: number; error: boolean } {
  let out = '';
  let i = start + 1;
  while (i < input.length) {
    const ch = input[i]!;
    if (ch === '"') return { value: out, end: i + 1, error: false };
    if (ch.charCodeAt(0) < 0x20) return { value: out, end: i + 1, error: true };
    if (ch === '\\') {
      const esc = ESCAPES[input[i + 1] ?? ''];
      if (esc === undefined) return { value: out, end: Math.min(i + 2, input.length), error: true };
      out += esc;
      i += 2;
      continue;
    }
    out += ch;
    i++;
  }
  return { value: out, end: input.length, error: true };
}

/** 1-based line and 0-based column (in code points) of an offset, as ANTLR reports them. */
export function positionOf(input: string, offset: number): { line: number; column: number } {
  const before = input.slice(0, offset);
  const lastNl = before.lastIndexOf('\n');
  let line = 1;
  for (let i = 0; i < before.length; i++) if (before.charCodeAt(i) === 10) line++;
  const column = Array.from(before.slice(lastNl + 1)).length;
  return { line, column };
}
