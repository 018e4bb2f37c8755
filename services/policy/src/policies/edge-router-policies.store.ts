import type { Db } from '@ziti/platform';
import { type QueryEntity, arraySet, defineQueryEntity, scalar } from '@ziti/zitiql';
import { linkTableOf } from '../access/link-tables.store.ts';
import { PgPolicyStore, type PolicyTable, commonPolicyFields, linked } from './policies.store.ts';

/** Filterable fields of edge-router policies (ZITI-FACTS §3.5). */
export const edgeRouterPolicyQuery: QueryEntity = defineQueryEntity({
  table: 'edge_router_policies',
  alias: 'p',
  fields: {
    ...commonPolicyFields('p'),
    isSystem: scalar('p.is_system', 'boolean'),
    identityRoles: arraySet('p.identity_roles', 'string'),
    edgeRouterRoles: arraySet('p.edge_router_roles', 'string'),
    ...linked('identities', linkTableOf('edgeRouter', 'identities')),
    ...linked('edgeRouters', linkTableOf('edgeRouter', 'edge_routers')),
  },
});

/** The kind's table, as the relation lists read it too. */
export const edgeRouterPolicyTable: PolicyTable = {
  table: 'edge_router_policies',
  store: 'edgeRouterPolicies',
  roles: { identityRoles: 'identity_roles', edgeRouterRoles: 'edge_router_roles' },
  hasType: false,
  hasIsSystem: true,
  query: edgeRouterPolicyQuery,
};

export const pgEdgeRouterPolicies = (db: Db) => new PgPolicyStore(db, edgeRouterPolicyTable);
