import type { PolicyKind, Touched } from './access.ports.ts';

/** What a link table links a policy to: read models (live rows only) and policy's own posture checks. */
export type LinkedEntities = 'identities' | 'services' | 'edge_routers' | 'posture_checks';

/**
 * One link table of docs/adr/0009 (migrations 0003, 0006): a policy table's roles selecting the
 * live rows of an entity table, one `(policy_id, <column>)` row a link.
 */
export interface LinkTable {
  table: string;
  /** The link's column of the linked entity's id. */
  column: string;
  entities: LinkedEntities;
  /** The policy's column of the roles that select them. */
  roles: string;
  policies: 'service_policies' | 'edge_router_policies' | 'service_edge_router_policies';
  /** A column of the policy kept on each link, so access read from the links is the policy as linked. */
  carry?: string;
}

/** Each policy kind's link tables: the one description the derivation, the relations, the what-if and the filters read. */
export const policyLinkTables: Record<PolicyKind, readonly LinkTable[]> = {
  service: [
    {
      table: 'service_policy_identities',
      column: 'identity_id',
      entities: 'identities',
      roles: 'identity_roles',
      policies: 'service_policies',
    },
    {
      table: 'service_policy_services',
      column: 'service_id',
      entities: 'services',
      roles: 'service_roles',
      policies: 'service_policies',
      carry: 'type',
    },
    {
      table: 'service_policy_posture_checks',
      column: 'posture_check_id',
      entities: 'posture_checks',
      roles: 'posture_check_roles',
      policies: 'service_policies',
    },
  ],
  edgeRouter: [
    {
      table: 'edge_router_policy_identities',
      column: 'identity_id',
      entities: 'identities',
      roles: 'identity_roles',
      policies: 'edge_router_policies',
    },
    {
      table: 'edge_router_policy_edge_routers',
      column: 'edge_router_id',
      entities: 'edge_routers',
      roles: 'edge_router_roles',
      policies: 'edge_router_policies',
    },
  ],
  serviceEdgeRouter: [
    {
      table: 'service_edge_router_policy_services',
      column: 'service_id',
      entities: 'services',
      roles: 'service_roles',
      policies: 'service_edge_router_policies',
    },
    {
      table: 'service_edge_router_policy_edge_routers',
      column: 'edge_router_id',
      entities: 'edge_routers',
      roles: 'edge_router_roles',
      policies: 'service_edge_router_policies',
    },
  ],
};

/** Every link table, kind by kind. */
export const allLinkTables: readonly LinkTable[] = Object.values(policyLinkTables).flat();

/** The list of `Touched` that holds the ids of a link table's entities. */
export const touchedKey: Record<LinkedEntities, keyof Touched> = {
  identities: 'identities',
  services: 'services',
  edge_routers: 'edgeRouters',
  posture_checks: 'postureChecks',
};

/** The link table of a policy kind to one kind of entity. */
export function linkTableOf(kind: PolicyKind, entities: LinkedEntities): LinkTable {
  const link = policyLinkTables[kind].find((l) => l.entities === entities);
  if (!link) throw new Error(`${kind} policies have no link table to ${entities}`);
  return link;
}
