/**
 * The list shapes every service's domain speaks (ZitiQL lists, `db/list.ts` runs them). Pure (no
 * I/O), so domain code imports them from here (`@ziti/platform/list-page`).
 */

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
