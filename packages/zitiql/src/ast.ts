/**
 * The typed AST of a ZitiQL query (ZITI-FACTS §4). Produced by `parseQuery`, consumed by the SQL
 * translator. It is storage-agnostic: no SQL, no entity knowledge.
 */

export type StringLiteral = { readonly type: 'string'; readonly value: string };

/**
 * A number as written. `isInt` follows Go: an integer-looking literal that fits int64 is an int, everything
 * else (fraction, exponent, int64 overflow) is a float64. `text` is the canonical decimal form used for SQL
 * parameters and for the number→string conversion (`name = 5` compares with "5").
 */
export type NumberLiteral = {
  readonly type: 'number';
  readonly value: number;
  readonly isInt: boolean;
  readonly text: string;
};

/**
 * `datetime(…)`: `value` is the instant with millisecond precision, `micros` the extra microseconds
 * (0–999) the literal carried, `text` the RFC3339 text as written.
 */
export type DatetimeLiteral = {
  readonly type: 'datetime';
  readonly value: Date;
  readonly micros: number;
  readonly text: string;
};

export type BoolLiteral = { readonly type: 'bool'; readonly value: boolean };
export type NullLiteral = { readonly type: 'null' };

export type Literal = StringLiteral | NumberLiteral | DatetimeLiteral | BoolLiteral | NullLiteral;

/** What a set function (`count`, `isEmpty`) applies to: a set symbol or `from <symbol> where <query>`. */
export type SetExpr =
  | { readonly kind: 'symbol'; readonly name: string }
  | { readonly kind: 'subquery'; readonly from: string; readonly query: Query };

/** Left-hand side of an operation. */
export type Lhs =
  | { readonly kind: 'symbol'; readonly name: string }
  | { readonly kind: 'anyOf' | 'allOf'; readonly name: string }
  | { readonly kind: 'count'; readonly set: SetExpr };

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type BoolExpr =
  | { readonly kind: 'const'; readonly value: boolean }
  /** A bare boolean symbol, e.g. `isAdmin`. */
  | { readonly kind: 'symbol'; readonly name: string }
  | { readonly kind: 'and'; readonly operands: readonly BoolExpr[] }
  | { readonly kind: 'or'; readonly operands: readonly BoolExpr[] }
  | { readonly kind: 'not'; readonly operand: BoolExpr }
  | { readonly kind: 'isEmpty'; readonly set: SetExpr }
  | { readonly kind: 'compare'; readonly lhs: Lhs; readonly op: CompareOp; readonly value: Literal }
  /** `lhs [not] in [v, …]` — values are non-empty and of one literal type (string, number or datetime). */
  | { readonly kind: 'in'; readonly lhs: Lhs; readonly negated: boolean; readonly values: readonly Literal[] }
  /** `lhs [not] between lower and upper` — numbers or datetimes. */
  | {
      readonly kind: 'between';
      readonly lhs: Lhs;
      readonly negated: boolean;
      readonly lower: Literal;
      readonly upper: Literal;
    }
  /** `lhs [not] contains v` / `lhs [not] icontains "v"`. */
  | {
      readonly kind: 'contains';
      readonly lhs: Lhs;
      readonly negated: boolean;
      readonly ignoreCase: boolean;
      readonly value: Literal;
    };

export type SortDirection = 'asc' | 'desc';

export interface SortField {
  readonly field: string;
  readonly direction: SortDirection;
}

export interface Query {
  /** `true` when the query has only sort/skip/limit clauses. */
  readonly filter: BoolExpr;
  /** Every `sort by` field as written (the translator honours the first 5). */
  readonly sort: readonly SortField[];
  /** `skip N`, when present. */
  readonly skip?: number;
  /** `limit N`, when present; `limit none` is -1. */
  readonly limit?: number;
}
