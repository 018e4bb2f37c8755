import type { BoolExpr, Lhs, Literal } from './ast.ts';

/**
 * An operation's positive form and whether the query negates it (`!=`, `not in`, `not between`,
 * `not contains`): what the SQL translator and the in-memory evaluator both work from, so the two
 * read a filter alike.
 */
export type Operation = Extract<BoolExpr, { kind: 'compare' | 'in' | 'between' | 'contains' }>;

/** The positive form of an operation; the `!=`/`not …` variants are its negation. */
export type Leaf =
  | { readonly kind: 'compare'; readonly op: '=' | '<' | '<=' | '>' | '>='; readonly value: Literal }
  | { readonly kind: 'in'; readonly values: readonly Literal[] }
  | { readonly kind: 'between'; readonly lower: Literal; readonly upper: Literal }
  | { readonly kind: 'contains'; readonly value: Literal; readonly ignoreCase: boolean };

export function splitOperation(expr: Operation): { lhs: Lhs; leaf: Leaf; negate: boolean } {
  switch (expr.kind) {
    case 'compare':
      return {
        lhs: expr.lhs,
        leaf: { kind: 'compare', op: expr.op === '!=' ? '=' : expr.op, value: expr.value },
        negate: expr.op === '!=',
      };
    case 'in':
      return { lhs: expr.lhs, leaf: { kind: 'in', values: expr.values }, negate: expr.negated };
    case 'between':
      return { lhs: expr.lhs, leaf: { kind: 'between', lower: expr.lower, upper: expr.upper }, negate: expr.negated };
    case 'contains':
      return {
        lhs: expr.lhs,
        leaf: { kind: 'contains', value: expr.value, ignoreCase: expr.ignoreCase },
        negate: expr.negated,
      };
  }
}

/** The literals a leaf compares with. */
export function literalsOf(leaf: Leaf | { readonly kind: 'truthy' }): readonly Literal[] {
  switch (leaf.kind) {
    case 'compare':
    case 'contains':
      return [leaf.value];
    case 'in':
      return leaf.values;
    case 'between':
      return [leaf.lower, leaf.upper];
    case 'truthy':
      return [];
  }
}
