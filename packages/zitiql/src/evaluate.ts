/**
 * ZitiQL evaluated in memory, on a JSON document (an entity's state) instead of in SQL: for filters
 * on things that are not rows, such as the change events of the event stream.
 *
 * The semantics are the SQL translator's for a `map` (jsonb) field (see translate.ts), which is
 * what a JSON document is:
 * - A symbol is a path into the document: `name`, `tags.env`, `primary.cert.allowed` (a key that
 *   itself holds dots, `tags.a.b` for the tag `a.b`, is found too). A symbol the document does not
 *   have is missing, like a NULL column: **unknown symbols are not an error here**, because a
 *   document has no declared field map (entity types differ, and states gain fields over versions).
 *   A list answers 400 for a symbol its entity does not declare; on a document that symbol simply
 *   matches nothing but `= null`.
 * - Any comparison with a missing value is false, and so are the negated operators (`!=`, `not in`,
 *   `not between`, `not contains`); `not (…)` negates the result. `x = null` is true for a missing
 *   value or a JSON null, `x != null` for any other value.
 * - Values compare by their JSON type: a string with a string literal (bytewise, like Go and
 *   `collate "C"`) or a number literal (its text, Go's number→string conversion); a number with a
 *   number literal; a boolean with `true`/`false`. Any other pairing is no match (a missing value).
 *   Beyond the translator's map fields: a string compared with a `datetime(…)` literal is read as
 *   an RFC 3339 time (states carry times as such strings), and no match when it is not one.
 * - `between` is half-open (`lower <= x < upper`); `contains` a case-sensitive substring test,
 *   `icontains` the same ignoring case, on strings and on numbers' text.
 * - Sets are JSON arrays: `anyOf(a) op v` (some element), `allOf(a) op v` (every element; true for
 *   an empty or missing array), `count(a)` (0 when missing), `isEmpty(a)` (true when missing). A
 *   value that is there but is no array is no set: those operations do not match it.
 * - A bare symbol (`isAdmin`) is true when the value is JSON `true`.
 *
 * Only what a document can answer compiles: `from <entity> where …` subqueries (they need the
 * related rows) and, in `compileCondition`, `sort by` / `skip` / `limit` are 400 INVALID_FILTER, as
 * are the type errors the translator finds without a field map (`count(x) = "a"`).
 */
import type { BoolExpr, Literal, Query, SetExpr } from './ast.ts';
import { invalidFilter } from './errors.ts';
import { type Leaf, type Operation, literalsOf, splitOperation } from './operation.ts';
import { datetimeLiteral, parseQuery } from './parser.ts';

/** A condition ready to evaluate: true when the document matches. */
export type DocumentPredicate = (document: unknown) => boolean;

/**
 * Parses a filter meant for documents (no `sort by`, `skip` or `limit`, no subqueries) and returns
 * its predicate; blank matches everything. Throws `ApiError('INVALID_FILTER')`.
 */
export function compileCondition(filter: string | undefined): DocumentPredicate {
  if (filter === undefined || filter.trim() === '') return () => true;
  const query = parseQuery(filter);
  if (query.sort.length > 0 || query.skip !== undefined || query.limit !== undefined) {
    throw invalidFilter('sort by, skip and limit do not apply to this filter');
  }
  return compilePredicate(query);
}

/** The predicate of a parsed query's condition (its sort, skip and limit are ignored). */
export function compilePredicate(query: Query): DocumentPredicate {
  checkExpr(query.filter);
  const expr = query.filter;
  return (document) => evaluate(expr, document);
}

/**
 * Evaluates a condition on a document. Call `compilePredicate` (or `compileCondition`) first: it
 * rejects what cannot be evaluated on a document, which this function would throw on mid-way.
 */
export function evaluate(expr: BoolExpr, document: unknown): boolean {
  switch (expr.kind) {
    case 'const':
      return expr.value;
    case 'and':
      return expr.operands.every((operand) => evaluate(operand, document));
    case 'or':
      return expr.operands.some((operand) => evaluate(operand, document));
    case 'not':
      return !evaluate(expr.operand, document);
    case 'symbol': {
      const value = lookup(document, expr.name);
      return value === true;
    }
    case 'isEmpty': {
      const set = setValue(document, symbolOf(expr.set));
      return set === undefined ? false : set.length === 0;
    }
    case 'compare':
    case 'in':
    case 'between':
    case 'contains':
      return operation(expr, document);
  }
}

// ---- static checks -----------------------------------------------------------------------------------

function symbolOf(set: SetExpr): string {
  if (set.kind === 'subquery') {
    throw invalidFilter(`'from ${set.from} where …' can not be evaluated here: only the entity's own fields can`);
  }
  return set.name;
}

function checkExpr(expr: BoolExpr): void {
  switch (expr.kind) {
    case 'and':
    case 'or':
      for (const operand of expr.operands) checkExpr(operand);
      return;
    case 'not':
      checkExpr(expr.operand);
      return;
    case 'isEmpty':
      symbolOf(expr.set);
      return;
    case 'compare':
    case 'in':
    case 'between':
    case 'contains':
      if (expr.lhs.kind === 'count') {
        symbolOf(expr.lhs.set);
        // A count is a number: the translator's type check, which needs no field map here.
        const { leaf } = splitOperation(expr);
        const ok =
          leaf.kind === 'contains'
            ? leaf.value.type === 'string' || leaf.value.type === 'number'
            : literalsOf(leaf).every((l) => l.type === 'number' || (leaf.kind === 'compare' && l.type === 'null'));
        if (!ok) {
          const bad = literalsOf(leaf).find((l) => l.type !== 'number');
          throw invalidFilter(
            `symbol 'count' of type number can not be compared to a ${bad?.type === 'bool' ? 'boolean' : (bad?.type ?? 'given')} value`,
          );
        }
      }
      return;
    case 'const':
    case 'symbol':
      return;
  }
}

// ---- documents ---------------------------------------------------------------------------------------

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at a dotted path; `undefined` when missing (a JSON null is returned as null). */
export function lookup(document: unknown, name: string): unknown {
  if (isObject(document) && Object.hasOwn(document, name)) return document[name];
  return walk(document, name.split('.'), 0);
}

function walk(value: unknown, path: readonly string[], from: number): unknown {
  if (from === path.length) return value;
  if (!isObject(value)) return undefined;
  // The longest key first: `tags.a.b` finds a tag named `a.b` before a tag `a` holding `b`.
  for (let to = path.length; to > from; to--) {
    const key = to === from + 1 ? path[from]! : path.slice(from, to).join('.');
    if (!Object.hasOwn(value, key)) continue;
    const found = walk(value[key], path, to);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A set symbol's elements: [] when missing, undefined when the value is there but no array. */
function setValue(document: unknown, name: string): readonly unknown[] | undefined {
  const value = lookup(document, name);
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : undefined;
}

// ---- operations --------------------------------------------------------------------------------------

/** Three-valued: null is "unknown" (a missing value, a type that cannot compare). */
type Truth = boolean | null;

/** A leaf made two-valued: unknown is false, negated forms included (`a != "x"` misses a missing `a`). */
function settle(result: Truth, negate: boolean): boolean {
  if (result === null) return false;
  return negate ? !result : result;
}

function operation(expr: Operation, document: unknown): boolean {
  const { lhs, leaf, negate } = splitOperation(expr);
  switch (lhs.kind) {
    case 'symbol':
      return settle(test(lookup(document, lhs.name), leaf), negate);
    case 'count': {
      const set = setValue(document, symbolOf(lhs.set));
      return settle(set === undefined ? null : test(set.length, leaf), negate);
    }
    case 'anyOf':
    case 'allOf': {
      const set = setValue(document, lhs.name);
      if (set === undefined) return false;
      const matches = (element: unknown) => settle(test(element, leaf), negate);
      return lhs.kind === 'anyOf' ? set.some(matches) : set.every(matches);
    }
  }
}

function test(value: unknown, leaf: Leaf): Truth {
  switch (leaf.kind) {
    case 'compare':
      return compare(value, leaf.op, leaf.value);
    case 'in': {
      let result: Truth = null;
      for (const literal of leaf.values) {
        const r = compare(value, '=', literal);
        if (r === true) return true;
        if (r === false) result = false;
      }
      return result;
    }
    case 'between': {
      const lower = compare(value, '>=', leaf.lower);
      const upper = compare(value, '<', leaf.upper);
      if (lower === null || upper === null) return null;
      return lower && upper;
    }
    case 'contains': {
      const text = typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
      if (text === undefined) return null;
      const needle = leaf.value.type === 'string' ? leaf.value.value : literalText(leaf.value);
      return leaf.ignoreCase ? text.toLowerCase().includes(needle.toLowerCase()) : text.includes(needle);
    }
  }
}

function compare(value: unknown, op: '=' | '<' | '<=' | '>' | '>=', literal: Literal): Truth {
  if (literal.type === 'null') {
    const missing = value === undefined || value === null;
    return op === '=' ? missing : null;
  }
  if (value === undefined || value === null) return null;
  let order: number | undefined;
  switch (literal.type) {
    case 'string':
      if (typeof value === 'string') order = compareText(value, literal.value);
      break;
    case 'number':
      if (typeof value === 'string') order = compareText(value, literal.text);
      else if (typeof value === 'number') order = Math.sign(value - literal.value);
      break;
    case 'datetime':
      if (typeof value === 'string') {
        const time = parseTime(value);
        if (time) {
          order = Math.sign(time.value.getTime() - literal.value.getTime()) || Math.sign(time.micros - literal.micros);
        }
      }
      break;
    case 'bool':
      if (typeof value === 'boolean') order = Number(value) - Number(literal.value);
      break;
  }
  if (order === undefined) return null;
  switch (op) {
    case '=':
      return order === 0;
    case '<':
      return order < 0;
    case '<=':
      return order <= 0;
    case '>':
      return order > 0;
    case '>=':
      return order >= 0;
  }
}

function parseTime(text: string): { value: Date; micros: number } | undefined {
  try {
    return datetimeLiteral(text);
  } catch {
    return undefined;
  }
}

function literalText(literal: Literal): string {
  switch (literal.type) {
    case 'string':
      return literal.value;
    case 'number':
    case 'datetime':
      return literal.text;
    case 'bool':
      return String(literal.value);
    case 'null':
      return '';
  }
}

/**
 * Bytewise (UTF-8) order, like Go's string comparison and `collate "C"`: code point order, which
 * UTF-16 code units follow except for surrogates against U+E000–U+FFFF.
 */
export function compareText(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    return codePointKey(x) - codePointKey(y) < 0 ? -1 : 1;
  }
  return a.length < b.length ? -1 : 1;
}

function codePointKey(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}
