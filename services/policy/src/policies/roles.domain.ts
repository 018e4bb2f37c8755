import { ApiError } from '@ziti/contracts';
import type { RoleTargets } from './roles.ports.ts';

/** The role fields of the three policy kinds and the entity type each selects (ZITI-FACTS §6.1). */
export type RoleField = 'identityRoles' | 'serviceRoles' | 'edgeRouterRoles' | 'postureCheckRoles';
export type RoleTarget = 'identities' | 'services' | 'edgeRouters' | 'postureChecks';

export const roleTargetOf: Record<RoleField, RoleTarget> = {
  identityRoles: 'identities',
  serviceRoles: 'services',
  edgeRouterRoles: 'edgeRouters',
  postureCheckRoles: 'postureChecks',
};

export const allRole = '#all';

const idsOf = (roles: string[]) => roles.filter((r) => r.startsWith('@')).map((r) => r.slice(1));

/**
 * A policy's role list as the reference checks it (ziti `controller/db/policy_common.go`):
 * `#all` only alone, every entry `#attribute` or `@id`, and every `@id` an existing entity of the
 * field's type. Returned sorted and without duplicates, as stored.
 */
export async function validateRoles(
  field: RoleField,
  values: string[] | null | undefined,
  targets: RoleTargets,
): Promise<string[]> {
  const roles = [...new Set(values ?? [])].sort();
  if (roles.length > 1 && roles.includes(allRole)) {
    throw ApiError.field(field, `if using ${allRole}, it should be the only role specified`, roles);
  }
  const invalid = roles.filter((r) => !r.startsWith('#') && !r.startsWith('@'));
  if (invalid.length > 0) {
    throw ApiError.field(
      field,
      'role entries must prefixed with # (to indicate role attributes) or @ (to indicate a name or id)',
      invalid,
    );
  }
  const ids = idsOf(roles);
  if (ids.length > 0) {
    const target = roleTargetOf[field];
    const found = await targets.existing(target, ids);
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length > 0) throw ApiError.field(field, `no ${target} found with the given ids`, missing);
  }
  return roles;
}

/** `…RolesDisplay`: `@id` shows `@<name>` (the id again if the entity is gone), `#attr` itself. */
export function displayRoles(roles: string[], names: Map<string, string>): { role: string; name: string }[] {
  return roles.map((role) => {
    if (!role.startsWith('@')) return { role, name: role };
    const name = names.get(role.slice(1));
    return { role, name: name === undefined ? role : `@${name}` };
  });
}

/** The `@id`s of a set of role lists, for one names lookup. */
export function referencedIds(lists: string[][]): string[] {
  return [...new Set(lists.flatMap(idsOf))];
}
