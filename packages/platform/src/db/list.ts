import { ApiError } from '@ziti/contracts';
import { type ListQueryInput, type QueryEntity, buildListQuery, filterableFields } from '@ziti/zitiql';
import { type Db, queryRows } from './database.ts';
import type { ListPage, RoleFilter } from '../list-page.ts';

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
 *
 * `detail` adds, to each listed row, what its detail shows from other tables (`columns` over the
 * page, which is named by the entity's alias and keeps every column of the entity's table, with the
 * `join`s they need), read with the page in one statement instead of a query per page or per row. With it, a first page also carries its
 * total in that statement, and a first page that is not full needs no count at all (its total is
 * its size; the count is an uncorrelated subquery evaluated only when the page is full). A later
 * page runs its count beside it, as without `detail`.
 */
export async function listRows<R = Record<string, unknown>>(
  db: Db,
  entity: QueryEntity,
  input: ListQueryInput,
  options: {
    scope?: { sql: string; params: unknown[] };
    columns?: string;
    with?: { sql: string; params: unknown[] };
    detail?: { columns: string; join?: string };
  } = {},
): Promise<ListedRows<R>> {
  const fixed = [...(options.with?.params ?? []), ...(options.scope?.params ?? [])];
  const list = buildListQuery(entity, input, { paramOffset: fixed.length });
  const params = [...fixed, ...list.params];
  const withSql = options.with ? `with ${options.with.sql} ` : '';
  const scopeSql = options.scope ? `(${options.scope.sql}) and ` : '';
  const from = `from ${entity.table} ${entity.alias} where ${scopeSql}(${list.where})`;
  const countSql = `select count(*)::int as count ${from}`;
  const columns = options.columns ?? `${entity.alias}.*`;
  const pageParams = [...params];
  let limitParam: string | undefined;
  let bounds = '';
  if (list.limit !== null) {
    pageParams.push(list.limit);
    limitParam = `$${pageParams.length}`;
    bounds += ` limit ${limitParam}`;
  }
  if (list.offset > 0) {
    pageParams.push(list.offset);
    bounds += ` offset $${pageParams.length}`;
  }
  const listed = (rows: R[], totalCount: number): ListedRows<R> => ({
    rows,
    totalCount,
    pagination: list.pagination,
    filterableFields: filterableFields(entity),
  });

  if (!options.detail) {
    const [rows, count] = await Promise.all([
      queryRows<R>(db, `${withSql}select ${columns} ${from} order by ${list.orderBy}${bounds}`, pageParams),
      queryRows<{ count: number }>(db, `${withSql}${countSql}`, params),
    ]);
    return listed(rows, count[0]?.count ?? 0);
  }

  // The page as a CTE named by the entity's alias, with every column of the entity's table: the
  // list's order and the detail refer to them, and the decorated rows are put in that order again.
  const a = entity.alias;
  const page = `${options.with ? `with ${options.with.sql}, ` : 'with '}${a} as (
    select ${a}.*, true as list_row ${from} order by ${list.orderBy}${bounds})`;
  const decorated = `${columns}, ${options.detail.columns}`;
  const join = options.detail.join ?? '';
  const strip = (rows: Record<string, unknown>[]) =>
    rows.filter((r) => r.list_row === true).map(({ list_row: _r, list_total: _t, ...row }) => row as R);
  if (list.offset > 0) {
    const [rows, count] = await Promise.all([
      queryRows<Record<string, unknown>>(
        db,
        `${page} select ${a}.list_row, ${decorated} from ${a} ${join} order by ${list.orderBy}`,
        pageParams,
      ),
      queryRows<{ count: number }>(db, `${withSql}${countSql}`, params),
    ]);
    return listed(strip(rows), count[0]?.count ?? 0);
  }
  const total =
    limitParam === undefined
      ? `(select count(*)::int from ${a})`
      : `case when (select count(*) from ${a}) < ${limitParam} then (select count(*)::int from ${a})
              else (${countSql}) end`;
  // One row even for an empty page (the total, with nulls for the rest).
  const rows = await queryRows<Record<string, unknown>>(
    db,
    `${page} select t.list_total, ${a}.list_row, ${decorated}
       from (select ${total} as list_total) t left join ${a} on true ${join}
      order by ${list.orderBy}`,
    pageParams,
  );
  return listed(strip(rows), Number(rows[0]?.list_total ?? 0));
}

/** The list shapes (`ListInput`, `ListPage`, `RoleFilter`) are pure: `../list-page.ts`. */
export type { ListInput, ListPage, RoleFilter } from '../list-page.ts';

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
