import { roleFilterScope } from '@ziti/platform';
import type { RoleFilter } from './model.domain.ts';

// Helpers shared by inventory's Postgres stores (`<resource>/<resource>.store.ts`, one per resource).

export type Row = Record<string, unknown>;

export function roleScope(
  filter: RoleFilter | undefined,
  alias: string,
): { sql: string; params: unknown[] } | undefined {
  if (!filter || filter.roles.length === 0) return undefined;
  return roleFilterScope(filter, `${alias}.role_attributes`, `${alias}.id`);
}

/** ANDs scopes written with their own `$1…` numbering into one. */
export function combine(
  scopes: ({ sql: string; params: unknown[] } | undefined)[],
): { sql: string; params: unknown[] } | undefined {
  const present = scopes.filter((s): s is { sql: string; params: unknown[] } => s !== undefined);
  if (present.length === 0) return undefined;
  const params: unknown[] = [];
  const parts = present.map((s) => {
    const offset = params.length;
    params.push(...s.params);
    return `(${s.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
  });
  return { sql: parts.join(' and '), params };
}

export const listOptions = (scope: { sql: string; params: unknown[] } | undefined) => (scope ? { scope } : {});
