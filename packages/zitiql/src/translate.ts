/**
 * AST → parameterised PostgreSQL.
 *
 * Semantics (Go/boltz reference, ZITI-FACTS §4):
 * - Boolean logic is two-valued like Go: a comparison on a NULL value is false, and every negation
 *   (`not`, `!=`, `not in`, `not between`, `not contains`, `not icontains`) is the plain negation of the
 *   positive form — so `a != "x"` is true when `a` is NULL. Leaves that can yield SQL NULL are wrapped in
 *   `coalesce(…, false)` wherever they sit under an odd number of negations (in a positive position a NULL
 *   already behaves as false in WHERE).
 * - `between` is half-open like the reference: `lower <= x < upper`.
 * - String ordering (`<`, `>`, `between`, sort) is bytewise (`collate "C"`), like Go string comparison.
 * - `contains` is a case-sensitive substring test (`like`, escaped), `icontains` the same with `ilike`; both
 *   accept string and number symbols (numbers are compared through their text form).
 * - A number literal compared with a string symbol is converted to its text (Go's int64/float64→string).
 * - Set symbols: `anyOf(s) op v` = some element satisfies, `allOf(s) op v` = every element satisfies
 *   (true for an empty set), `count(s)`, `isEmpty(s)`.
 * - Map symbols (`tags.key`) compare by the JSON type of the stored value: string values as text, number
 *   values numerically (a string value against a number literal compares as text, like Go's conversion),
 *   booleans as booleans; `= null` matches a missing key or a JSON null.
 */
import type { BoolExpr, DatetimeLiteral, Literal, Query, SetExpr, SortField } from './ast.ts';
import { type FieldType, type QueryEntity, resolveEntity, type SetField, type SubqueryDef, sqlOf } from './entity.ts';
import { invalidFilter } from './errors.ts';
import { type Leaf, type Operation, literalsOf, splitOperation } from './operation.ts';

/** At most this many `sort by` fields are honoured (storage `boltz/query.go SortMax`). */
export const MAX_SORT_FIELDS = 5;
/** A filter producing more bind parameters than this is rejected (Postgres allows 65535). */
export const MAX_PARAMS = 10_000;

export interface CompileOptions {
  /** Number of `$n` parameters already used by the surrounding statement; numbering starts after it. */
  readonly paramOffset?: number;
  /** Error to raise for an invalid sort field (default INVALID_FILTER; the `sort` param uses INVALID_SORT_IDENTIFIER). */
  readonly sortError?: (message: string) => Error;
}

export interface CompiledQuery {
  /** SQL boolean expression over the entity's alias (no `WHERE` keyword). */
  readonly where: string;
  /** Bind values for `$paramOffset+1 …`. */
  readonly params: unknown[];
  /** `ORDER BY` items (no keyword), always ending with the entity's default sort as a tie-breaker. */
  readonly orderBy: string;
  /** The honoured sort fields (at most 5), validated. */
  readonly sort: readonly SortField[];
  readonly skip?: number;
  readonly limit?: number;
}

/** Translates a parsed query against an entity's field map. Throws `ApiError('INVALID_FILTER')` on semantic errors. */
export function compileQuery(entity: QueryEntity, query: Query, options: CompileOptions = {}): CompiledQuery {
  const ctx = new Context(options.paramOffset ?? 0);
  const scope: Scope = { entity, alias: entity.alias };
  const where = translateBool(ctx, scope, query.filter, false);
  const sort = query.sort.slice(0, MAX_SORT_FIELDS);
  const orderBy = orderByClause(scope, sort, options.sortError ?? invalidFilter);
  return {
    where,
    params: ctx.params,
    orderBy,
    sort,
    ...(query.skip === undefined ? {} : { skip: query.skip }),
    ...(query.limit === undefined ? {} : { limit: query.limit }),
  };
}

// ---- context ---------------------------------------------------------------------------------------

type Cast = 'text' | 'numeric' | 'boolean' | 'timestamptz' | 'bigint';

class Context {
  readonly params: unknown[] = [];
  private sets = 0;

  constructor(private readonly offset: number) {}

  param(value: unknown, cast: Cast): string {
    if (this.params.length >= MAX_PARAMS) throw invalidFilter(`filter uses more than ${MAX_PARAMS} values`);
    this.params.push(value);
    return `$${this.offset + this.params.length}::${cast}`;
  }

  setAlias(): string {
    return `zq_s${++this.sets}`;
  }
}

interface Scope {
  readonly entity: QueryEntity;
  readonly alias: string;
}

// ---- symbol resolution ----------------------------------------------------------------------------

type Resolved =
  | { readonly kind: 'scalar'; readonly sql: string; readonly type: FieldType }
  | { readonly kind: 'json'; readonly sql: string }
  | { readonly kind: 'mapRoot' }
  | { readonly kind: 'set'; readonly field: SetField }
  | { readonly kind: 'link'; readonly def: SubqueryDef };

function resolve(ctx: Context, scope: Scope, name: string): Resolved {
  const { entity, alias } = scope;
  if (Object.hasOwn(entity.fields, name)) {
    const field = entity.fields[name]!;
    switch (field.kind) {
      case 'scalar':
        return { kind: 'scalar', sql: sqlOf(field.sql, alias), type: field.type };
      case 'set':
        return { kind: 'set', field };
      case 'map':
        return { kind: 'mapRoot' };
    }
  }
  if (Object.hasOwn(entity.subqueries, name)) return { kind: 'link', def: entity.subqueries[name]! };
  let best: string | undefined;
  for (const [fieldName, field] of Object.entries(entity.fields)) {
    if (field.kind === 'map' && name.startsWith(`${fieldName}.`) && fieldName.length > (best?.length ?? -1)) {
      best = fieldName;
    }
  }
  if (best !== undefined) {
    const root = sqlOf(entity.fields[best]!.sql, alias);
    const path = name.slice(best.length + 1).split('.');
    return { kind: 'json', sql: `(${root}${path.map((key) => ` -> ${ctx.param(key, 'text')}`).join('')})` };
  }
  throw invalidFilter(`unknown symbol '${name}'`);
}

type Operand =
  | { readonly kind: 'typed'; readonly sql: string; readonly type: FieldType }
  | { readonly kind: 'json'; readonly sql: string };

function scalarOperand(ctx: Context, scope: Scope, name: string): Operand {
  const r = resolve(ctx, scope, name);
  switch (r.kind) {
    case 'scalar':
      return { kind: 'typed', sql: r.sql, type: r.type };
    case 'json':
      return r;
    case 'mapRoot':
      throw invalidFilter(`symbol '${name}' is a map symbol, use it as '${name}.<key>'`);
    case 'set':
    case 'link':
      throw invalidFilter(`symbol '${name}' is a set symbol but is used in non-set function context`);
  }
}

/** A set to iterate: either an array expression or a SELECT returning one column. */
interface SetSource {
  readonly source: 'array' | 'query';
  readonly sql: string;
  readonly type: FieldType;
}

function setSource(ctx: Context, scope: Scope, name: string, fn: string): SetSource {
  const r = resolve(ctx, scope, name);
  switch (r.kind) {
    case 'set':
      return { source: r.field.source, sql: sqlOf(r.field.sql, scope.alias), type: r.field.type };
    case 'link': {
      const inner = linkedEntity(scope, r.def);
      const idName = inner.fields.id?.kind === 'scalar' ? 'id' : inner.defaultSort;
      const id = inner.fields[idName];
      if (id?.kind !== 'scalar') throw new Error(`zitiql: ${inner.table} has no scalar id field`);
      const sql = `select ${sqlOf(id.sql, inner.alias)} from ${inner.table} ${inner.alias} where ${r.def.on(scope.alias, inner.alias)}`;
      return { source: 'query', sql, type: id.type };
    }
    default:
      throw invalidFilter(`symbol '${name}' is not a set symbol but is used in set function ${fn}`);
  }
}

function linkedEntity(scope: Scope, def: SubqueryDef): QueryEntity {
  const inner = resolveEntity(def);
  if (inner.alias === scope.alias) {
    throw new Error(`zitiql: linked entity ${inner.table} must not use the alias '${scope.alias}' of its parent`);
  }
  return inner;
}

function setFrom(src: SetSource, alias: string): string {
  return src.source === 'array' ? `unnest(${src.sql}) as ${alias}(v)` : `(${src.sql}) as ${alias}(v)`;
}

// ---- boolean expressions ----------------------------------------------------------------------------

/** `negated`: whether the expression sits under an odd number of negations (then it must be two-valued). */
function translateBool(ctx: Context, scope: Scope, expr: BoolExpr, negated: boolean): string {
  switch (expr.kind) {
    case 'const':
      return expr.value ? 'true' : 'false';
    case 'and':
    case 'or':
      return `(${expr.operands.map((op) => translateBool(ctx, scope, op, negated)).join(` ${expr.kind} `)})`;
    case 'not':
      return `(not ${translateBool(ctx, scope, expr.operand, !negated)})`;
    case 'isEmpty':
      return isEmptySql(ctx, scope, expr.set);
    case 'symbol':
      return wrapLeaf(
        predicate(ctx, scalarOperand(ctx, scope, expr.name), { kind: 'truthy' }, expr.name),
        false,
        negated,
      );
    case 'compare':
    case 'in':
    case 'between':
    case 'contains':
      return operationSql(ctx, scope, expr, negated);
  }
}

/**
 * A leaf predicate that may be NULL, made safe for its position. Like the reference (storage
 * `ast/node_bool.go`), any comparison with a missing value is false, negated forms included:
 * `a != "x"` does not match a row whose `a` is null (use `a = null` for those).
 */
function wrapLeaf(sql: string, negate: boolean, negatedPosition: boolean): string {
  if (negate) return `coalesce(not (${sql}), false)`;
  return negatedPosition ? `coalesce(${sql}, false)` : sql;
}

/** A leaf of the SQL translator: an operation's positive form, or a bare boolean symbol. */
type SqlLeaf = Leaf | { readonly kind: 'truthy' };

function operationSql(ctx: Context, scope: Scope, expr: Operation, negatedPosition: boolean): string {
  const { lhs, leaf, negate } = splitOperation(expr);
  switch (lhs.kind) {
    case 'symbol': {
      const operand = scalarOperand(ctx, scope, lhs.name);
      if (operand.kind === 'typed' && negate && leaf.kind === 'compare' && leaf.value.type === 'null') {
        return `((${operand.sql}) is not null)`;
      }
      return wrapLeaf(predicate(ctx, operand, leaf, lhs.name), negate, negatedPosition);
    }
    case 'count': {
      const operand: Operand = { kind: 'typed', sql: countSql(ctx, scope, lhs.set), type: 'number' };
      return wrapLeaf(predicate(ctx, operand, leaf, 'count'), negate, negatedPosition);
    }
    case 'anyOf':
    case 'allOf': {
      const src = setSource(ctx, scope, lhs.name, lhs.kind);
      // Fast path that can use a GIN index: anyOf(textArray) = "x".
      if (
        lhs.kind === 'anyOf' &&
        !negate &&
        src.source === 'array' &&
        src.type === 'string' &&
        leaf.kind === 'compare' &&
        leaf.op === '=' &&
        leaf.value.type === 'string'
      ) {
        const contains = `((${src.sql}) @> array[${ctx.param(leaf.value.value, 'text')}])`;
        return wrapLeaf(contains, false, negatedPosition);
      }
      const alias = ctx.setAlias();
      const element: Operand = { kind: 'typed', sql: `${alias}.v`, type: src.type };
      const elementPredicate = wrapLeaf(predicate(ctx, element, leaf, lhs.name), negate, false);
      if (lhs.kind === 'anyOf') return `exists (select 1 from ${setFrom(src, alias)} where ${elementPredicate})`;
      return `(not exists (select 1 from ${setFrom(src, alias)} where not coalesce(${elementPredicate}, false)))`;
    }
  }
}

function countSql(ctx: Context, scope: Scope, set: SetExpr): string {
  if (set.kind === 'subquery') return `(select count(*) from (${subquerySql(ctx, scope, set)}) as ${ctx.setAlias()})`;
  const src = setSource(ctx, scope, set.name, 'count');
  if (src.source === 'array') return `coalesce(cardinality(${src.sql}), 0)`;
  return `(select count(*) from ${setFrom(src, ctx.setAlias())})`;
}

function isEmptySql(ctx: Context, scope: Scope, set: SetExpr): string {
  if (set.kind === 'subquery') return `(not exists (${subquerySql(ctx, scope, set)}))`;
  const src = setSource(ctx, scope, set.name, 'isEmpty');
  if (src.source === 'array') return `(coalesce(cardinality(${src.sql}), 0) = 0)`;
  return `(not exists (select 1 from ${setFrom(src, ctx.setAlias())}))`;
}

/** `from <link> where <query>`: the linked rows of the current row matching the inner query. */
function subquerySql(ctx: Context, scope: Scope, set: Extract<SetExpr, { kind: 'subquery' }>): string {
  if (!Object.hasOwn(scope.entity.subqueries, set.from)) {
    resolve(ctx, scope, set.from); // unknown symbol → INVALID_FILTER
    throw invalidFilter(`symbol '${set.from}' is not an entity set and can not be used in a from clause`);
  }
  const def = scope.entity.subqueries[set.from]!;
  const inner = linkedEntity(scope, def);
  const innerScope: Scope = { entity: inner, alias: inner.alias };
  const where = translateBool(ctx, innerScope, set.query.filter, false);
  const sort = set.query.sort.slice(0, MAX_SORT_FIELDS);
  const orderBy = orderByClause(innerScope, sort, invalidFilter);
  let sql = `select 1 from ${inner.table} ${inner.alias} where (${def.on(scope.alias, inner.alias)}) and ${where}`;
  const { limit, skip } = set.query;
  const limited = limit !== undefined && limit >= 0;
  const skipped = skip !== undefined && skip > 0;
  if (limited || skipped) {
    sql += ` order by ${orderBy}`;
    if (limited) sql += ` limit ${ctx.param(String(limit), 'bigint')}`;
    if (skipped) sql += ` offset ${ctx.param(String(skip), 'bigint')}`;
  }
  return sql;
}

// ---- leaf predicates ---------------------------------------------------------------------------------

/** Whether a symbol of `type` can take part in `leaf` with these literals (Go's automatic conversions). */
function compatible(type: FieldType, leaf: SqlLeaf): boolean {
  if (leaf.kind === 'truthy') return type === 'boolean';
  const literals = literalsOf(leaf);
  if (leaf.kind === 'compare' && leaf.value.type === 'null') return true;
  if (leaf.kind === 'contains') {
    return (
      (type === 'string' || type === 'number') && literals.every((l) => l.type === 'string' || l.type === 'number')
    );
  }
  return literals.every((l) => accepts(type, l));
}

/** Go's automatic conversions: int64→float64, numbers→string. */
function accepts(type: FieldType, literal: Literal): boolean {
  switch (type) {
    case 'string':
      return literal.type === 'string' || literal.type === 'number';
    case 'number':
      return literal.type === 'number';
    case 'boolean':
      return literal.type === 'bool';
    case 'datetime':
      return literal.type === 'datetime';
  }
}

function incompatibility(type: FieldType, leaf: SqlLeaf, name: string): Error {
  if (leaf.kind === 'truthy') return invalidFilter(`symbol '${name}' is not a boolean symbol`);
  if (leaf.kind === 'contains') {
    return invalidFilter(
      `symbol '${name}' of type ${type} can not be used with ${leaf.ignoreCase ? 'icontains' : 'contains'}`,
    );
  }
  const bad = literalsOf(leaf).find((l) => !accepts(type, l));
  const what = bad?.type === 'bool' ? 'boolean' : (bad?.type ?? 'given');
  return invalidFilter(`symbol '${name}' of type ${type} can not be compared to a ${what} value`);
}

function predicate(ctx: Context, operand: Operand, leaf: SqlLeaf, name: string): string {
  if (operand.kind === 'json') return jsonPredicate(ctx, operand.sql, leaf);
  if (!compatible(operand.type, leaf)) throw incompatibility(operand.type, leaf, name);
  return typedPredicate(ctx, operand.sql, operand.type, leaf);
}

/** Must only be called when `compatible(type, leaf)`. */
function typedPredicate(ctx: Context, sql: string, type: FieldType, leaf: SqlLeaf): string {
  const collate = type === 'string' ? ' collate "C"' : '';
  switch (leaf.kind) {
    case 'truthy':
      return `(${sql})`;
    case 'compare':
      if (leaf.value.type === 'null') return `((${sql}) is null)`;
      return `((${sql}) ${leaf.op} ${value(ctx, type, leaf.value)}${leaf.op === '=' ? '' : collate})`;
    case 'in':
      return `((${sql}) in (${leaf.values.map((v) => value(ctx, type, v)).join(', ')}))`;
    case 'between':
      return `((${sql}) >= ${value(ctx, type, leaf.lower)}${collate} and (${sql}) < ${value(ctx, type, leaf.upper)}${collate})`;
    case 'contains': {
      const needle = leaf.value.type === 'string' ? leaf.value.value : literalText(leaf.value);
      // A LIKE pattern with its special characters escaped: the same substring test, and one a
      // trigram index (pg_trgm) can answer without reading every row.
      const pattern = ctx.param(`%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`, 'text');
      return leaf.ignoreCase ? `((${sql})::text ilike ${pattern})` : `((${sql})::text like ${pattern})`;
    }
  }
}

const JSON_ALTERNATIVES: ReadonlyArray<readonly [string, FieldType, (json: string) => string]> = [
  ['string', 'string', (j) => `(${j} #>> '{}')`],
  ['number', 'number', (j) => `(${j} #>> '{}')::numeric`],
  ['boolean', 'boolean', (j) => `(${j} #>> '{}')::boolean`],
];

function jsonPredicate(ctx: Context, json: string, leaf: SqlLeaf): string {
  if (leaf.kind === 'compare' && leaf.value.type === 'null')
    return `(coalesce(jsonb_typeof(${json}), 'null') = 'null')`;
  if (leaf.kind === 'truthy') return `(${json} = 'true'::jsonb)`;
  const branches = JSON_ALTERNATIVES.filter(([, type]) => compatible(type, leaf)).map(
    ([jsonType, type, extract]) => `when '${jsonType}' then ${typedPredicate(ctx, extract(json), type, leaf)}`,
  );
  // No JSON type can match (e.g. a datetime literal); still reference the path parameters.
  if (branches.length === 0) return `((${json}) is null and false)`;
  return `(case jsonb_typeof(${json}) ${branches.join(' ')} end)`;
}

/** A literal as a typed bind parameter for a symbol of `type` (compatibility already checked). */
function value(ctx: Context, type: FieldType, literal: Literal): string {
  switch (type) {
    case 'string':
      return ctx.param(literal.type === 'string' ? literal.value : literalText(literal), 'text');
    case 'number':
      return ctx.param(literalText(literal), 'numeric');
    case 'boolean':
      return ctx.param(literal.type === 'bool' ? literal.value : null, 'boolean');
    case 'datetime':
      return ctx.param(literal.type === 'datetime' ? pgTimestamp(literal) : null, 'timestamptz');
  }
}

function literalText(literal: Literal): string {
  switch (literal.type) {
    case 'string':
      return literal.value;
    case 'number':
      return literal.text;
    case 'datetime':
      return literal.text;
    case 'bool':
      return String(literal.value);
    case 'null':
      return '';
  }
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** A Postgres timestamptz text for any instant Go accepts (year 0000 becomes 0001 BC). */
export function pgTimestamp(literal: DatetimeLiteral): string {
  const d = literal.value;
  const year = d.getUTCFullYear();
  const bc = year <= 0;
  const date = `${pad(bc ? 1 - year : year, 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  const fraction = `${pad(d.getUTCMilliseconds(), 3)}${pad(literal.micros, 3)}`;
  return `${date} ${time}.${fraction}+00${bc ? ' BC' : ''}`;
}

// ---- sorting -----------------------------------------------------------------------------------------

const constantSql = /^(true|false|null|-?\d+(\.\d+)?|'[^']*')$/i;

/** Like `resolve`, without touching the parameters (ORDER BY never carries any); undefined for a constant. */
function sortItem(
  scope: Scope,
  name: string,
  direction: 'asc' | 'desc',
  error: (message: string) => Error,
): string | undefined {
  const { fields, subqueries } = scope.entity;
  const field = Object.hasOwn(fields, name) ? fields[name]! : undefined;
  if (field?.kind === 'scalar') {
    const sql = sqlOf(field.sql, scope.alias);
    // A constant symbol (`isSystem` where no row is a system one) orders nothing, and Postgres refuses a
    // bare non-integer constant in ORDER BY: it is left out.
    if (constantSql.test(sql.trim())) return undefined;
    const nulls = direction === 'asc' ? 'nulls first' : 'nulls last';
    return `${sql}${field.type === 'string' ? ' collate "C"' : ''} ${direction} ${nulls}`;
  }
  if (field?.kind === 'set' || Object.hasOwn(subqueries, name)) {
    throw error(`symbol '${name}' is a set symbol and can not be used for sorting`);
  }
  if (field?.kind === 'map' || Object.entries(fields).some(([n, f]) => f.kind === 'map' && name.startsWith(`${n}.`))) {
    // Map keys would need bind parameters; ORDER BY stays parameter-free so `params` serve page and count alike.
    throw error(`symbol '${name}' is a map symbol and can not be used for sorting`);
  }
  throw error(`unknown symbol '${name}'`);
}

function orderByClause(scope: Scope, sort: readonly SortField[], error: (message: string) => Error): string {
  const items: string[] = [];
  const seen = new Set<string>();
  for (const { field, direction } of [...sort, { field: scope.entity.defaultSort, direction: 'asc' as const }]) {
    if (seen.has(field)) continue;
    seen.add(field);
    const item = sortItem(scope, field, direction, error);
    if (item !== undefined) items.push(item);
  }
  return items.join(', ');
}
