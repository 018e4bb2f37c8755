/**
 * List queries: `filter` / `limit` / `offset` / `sort` request parameters → SQL pieces and the effective
 * pagination (ZITI-FACTS §3.2–§3.4; ziti `routes.go GetRequestPaging`, `query_options.go getFullQuery`,
 * `base_model.go checkLimits`).
 */
import type { Query, SortField } from './ast.ts';
import type { QueryEntity } from './entity.ts';
import { invalidFilter, invalidPagination, invalidSort, isApiError } from './errors.ts';
import { parseQuery } from './parser.ts';
import { compileQuery } from './translate.ts';

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 500;
export const MAX_OFFSET = 100_000;

export interface ListQueryInput {
  readonly filter?: string | null;
  readonly limit?: string | number | null;
  readonly offset?: string | number | null;
  readonly sort?: string | null;
}

export interface ListQueryOptions {
  /** Number of `$n` parameters already used by the surrounding statement. */
  readonly paramOffset?: number;
}

export interface ListQuery {
  /** SQL boolean expression over the entity alias (no `WHERE` keyword); `true` for no filter. */
  readonly where: string;
  readonly params: unknown[];
  /** `ORDER BY` items (no keyword); always ends with the default sort field as tie-breaker. */
  readonly orderBy: string;
  /** Rows to return, `null` = unlimited. */
  readonly limit: number | null;
  readonly offset: number;
  /** What goes to `meta.pagination` (limit -1 = unlimited); add `totalCount` yourself. */
  readonly pagination: { readonly limit: number; readonly offset: number };
}

const TRUE_QUERY: Query = { filter: { kind: 'const', value: true }, sort: [] };

/**
 * Builds the list query. Errors: INVALID_FILTER (filter syntax / symbols), INVALID_SORT_IDENTIFIER
 * (`sort` param), INVALID_PAGINATION (non-integer `limit`/`offset`).
 */
export function buildListQuery(entity: QueryEntity, input: ListQueryInput, options: ListQueryOptions = {}): ListQuery {
  const query = isBlank(input.filter) ? TRUE_QUERY : parseQuery(input.filter!);
  const limitParam = integerParam('limit', input.limit);
  const offsetParam = integerParam('offset', input.offset);

  let sort: readonly SortField[] = query.sort;
  let sortError = invalidFilter;
  // The `sort` param only applies when the filter has no `sort by`; it is parsed as `true sort by <value>`.
  if (sort.length === 0 && !isBlank(input.sort)) {
    sort = parseSortParam(input.sort!);
    sortError = invalidSort;
  }

  const compiled = compileQuery(entity, { ...query, sort }, { paramOffset: options.paramOffset ?? 0, sortError });

  // limit/skip written in the filter win over the params.
  const pagination = normalizePaging(compiled.limit ?? limitParam, compiled.skip ?? offsetParam);
  return {
    where: compiled.where,
    params: compiled.params,
    orderBy: compiled.orderBy,
    limit: pagination.limit === -1 ? null : pagination.limit,
    offset: pagination.offset,
    pagination,
  };
}

/** `checkLimits`: default 10, 0 or < -1 → 10, -1 unlimited, max 500; offset 0…100000. */
export function normalizePaging(
  limit: number | undefined,
  offset: number | undefined,
): { limit: number; offset: number } {
  let l = limit ?? DEFAULT_LIMIT;
  if (l === 0 || l < -1) l = DEFAULT_LIMIT;
  if (l > MAX_LIMIT) l = MAX_LIMIT;
  let o = offset ?? 0;
  if (o < 0) o = 0;
  if (o > MAX_OFFSET) o = MAX_OFFSET;
  return { limit: l, offset: o };
}

/** Parses the `sort` request parameter (`name ASC, createdAt desc`); syntax errors are INVALID_SORT_IDENTIFIER. */
export function parseSortParam(sort: string): SortField[] {
  try {
    return [...parseQuery(`true sort by ${sort}`).sort];
  } catch (err) {
    if (isApiError(err)) {
      const cause = err.cause as { message?: unknown } | undefined;
      throw invalidSort(typeof cause?.message === 'string' ? cause.message : err.message);
    }
    throw err;
  }
}

function isBlank(value: string | null | undefined): boolean {
  return value === undefined || value === null || value.trim() === '';
}

function integerParam(name: string, value: string | number | null | undefined): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw invalidPagination(`${name} must be an integer: ${value}`);
    return value;
  }
  const text = value.trim();
  if (text === '') return undefined;
  if (!/^[+-]?\d+$/.test(text)) throw invalidPagination(`${name} must be an integer: ${value}`);
  return Number(text);
}

export interface SelectSql {
  /** `select <columns> from <table> <alias> where … order by … limit … offset …` */
  readonly text: string;
  readonly params: unknown[];
  /** `select count(*)::int as count from <table> <alias> where …` (totalCount ignores skip/limit). */
  readonly countText: string;
  readonly countParams: unknown[];
}

/**
 * Assembles the page and count statements of a list query built with `paramOffset` 0.
 * `columns` defaults to `<alias>.*`; limit/offset travel as parameters too.
 */
export function selectSql(entity: QueryEntity, list: ListQuery, columns = `${entity.alias}.*`): SelectSql {
  const from = `from ${entity.table} ${entity.alias} where ${list.where}`;
  const params = [...list.params];
  let text = `select ${columns} ${from} order by ${list.orderBy}`;
  if (list.limit !== null) {
    params.push(list.limit);
    text += ` limit $${params.length}`;
  }
  if (list.offset > 0) {
    params.push(list.offset);
    text += ` offset $${params.length}`;
  }
  return { text, params, countText: `select count(*)::int as count ${from}`, countParams: [...list.params] };
}
