import { ApiError } from '@ziti/contracts';
import { type ListQueryInput, type QueryEntity, buildListQuery, filterableFields } from '@ziti/zitiql';
import { type Db, queryRows } from './database.ts';

export interface ListedRows<R> {
  rows: R[];
  totalCount: number;
  pagination: { limit: number; offset: number };
  filterableFields: string[];
}

/**
 * One page of a ZitiQL list plus its total, on any service's database. `scope` narrows the rows
 * before the filter (e.g. one identity's authenticators, a role filter); its SQL uses `$1…$n` for
 * its own parameters. `with` prepends a CTE (used to query records that do not live in Postgres).
 */
export async function listRows<R = Record<string, unknown>>(
  db: Db,
  entity: QueryEntity,
  input: ListQueryInput,
  options: {
    scope?: { sql: string; params: unknown[] };
    columns?: string;
    with?: { sql: string; params: unknown[] };
  } = {},
): Promise<ListedRows<R>> {
  const fixed = [...(options.with?.params ?? []), ...(options.scope?.params ?? [])];
  const list = buildListQuery(entity, input, { paramOffset: fixed.length });
  const params = [...fixed, ...list.params];
  const withSql = options.with ? `with ${options.with.sql} ` : '';
  const scopeSql = options.scope ? `(${options.scope.sql}) and ` : '';
  const from = `from ${entity.table} ${entity.alias} where ${scopeSql}(${list.where})`;
  let text = `${withSql}select ${options.columns ?? `${entity.alias}.*`} ${from} order by ${list.orderBy}`;
  const pageParams = [...params];
  if (list.limit !== null) {
    pageParams.push(list.limit);
    text += ` limit $${pageParams.length}`;
  }
  if (list.offset > 0) {
    pageParams.push(list.offset);
    text += ` offset $${pageParams.length}`;
  }
  const [rows, count] = await Promise.all([
    queryRows<R>(db, text, pageParams),
    queryRows<{ count: number }>(db, `${withSql}select count(*)::int as count ${from}`, params),
  ]);
  return {
    rows,
    totalCount: count[0]?.count ?? 0,
    pagination: list.pagination,
    filterableFields: filterableFields(entity),
  };
}

/** What a list operation asks for (query parameters as received; ZitiQL rules in `buildListQuery`). */
export interface ListInput {
  filter?: string;
  limit?: string | number;
  offset?: string | number;
  sort?: string;
}

/** One page of domain records, with what `meta.pagination` and `filterableFields` need. */
export interface ListPage<T> {
  items: T[];
  totalCount: number;
  pagination: { limit: number; offset: number };
  filterableFields: string[];
}

/** `roleFilter`/`roleSemantic` of the management lists (ZITI-FACTS §6.4). */
export interface RoleFilter {
  roles: string[];
  semantic: 'AllOf' | 'AnyOf';
}

/** A listed page mapped to domain records: what stores hand back to the domain. */
export function toListPage<R, T>(listed: ListedRows<R>, map: (row: R) => T): ListPage<T> {
  return {
    items: listed.rows.map(map),
    totalCount: listed.totalCount,
    pagination: listed.pagination,
    filterableFields: listed.filterableFields,
  };
}

/**
 * `roleFilter`/`roleSemantic` of the management lists (ZITI-FACTS §6.4): entities whose role
 * attributes match the `#` entries with the semantic, unioned with the `@id` entries. Use as the
 * `scope` of `listRows`.
 */
export function roleFilterScope(
  filter: RoleFilter,
  column: string,
  idColumn: string,
): { sql: string; params: unknown[] } {
  const attrs: string[] = [];
  const ids: string[] = [];
  for (const role of filter.roles) {
    if (role.startsWith('#')) attrs.push(role.slice(1));
    else if (role.startsWith('@')) ids.push(role.slice(1));
    else {
      throw ApiError.field(
        'roleFilter',
        'role entries must prefixed with # (to indicate role attributes) or @ (to indicate a name or id)',
        role,
      );
    }
  }
  const parts: string[] = [];
  const params: unknown[] = [];
  if (attrs.length > 0) {
    params.push(attrs);
    parts.push(
      filter.semantic === 'AnyOf' ? `${column} && $${params.length}::text[]` : `${column} @> $${params.length}::text[]`,
    );
  }
  if (ids.length > 0) {
    params.push(ids);
    parts.push(`${idColumn} = any($${params.length}::text[])`);
  }
  return { sql: parts.length > 0 ? parts.join(' or ') : 'true', params };
}
