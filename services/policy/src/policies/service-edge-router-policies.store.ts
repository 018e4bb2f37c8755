import type { Db } from '@ziti/platform';
import { type QueryEntity, arraySet, defineQueryEntity } from '@ziti/zitiql';
import { linkTableOf } from '../access/link-tables.store.ts';
import { PgPolicyStore, type PolicyTable, commonPolicyFields, linked } from './policies.store.ts';

/** Filterable fields of service-edge-router policies (ZITI-FACTS §3.5). */
export const serviceEdgeRouterPolicyQuery: QueryEntity = defineQueryEntity({
  table: 'service_edge_router_policies',
  alias: 'p',
  fields: {
    ...commonPolicyFields('p'),
    serviceRoles: arraySet('p.service_roles', 'string'),
    edgeRouterRoles: arraySet('p.edge_router_roles', 'string'),
    ...linked('services', linkTableOf('serviceEdgeRouter', 'services')),
    ...linked('edgeRouters', linkTableOf('serviceEdgeRouter', 'edge_routers')),
  },
});

/** The kind's table, as the relation lists read it too. */
export const serviceEdgeRouterPolicyTable: PolicyTable = {
  table: 'service_edge_router_policies',
  store: 'serviceEdgeRouterPolicies',
  roles: { serviceRoles: 'service_roles', edgeRouterRoles: 'edge_router_roles' },
  hasType: false,
  hasIsSystem: false,
  query: serviceEdgeRouterPolicyQuery,
};

export const pgServiceEdgeRouterPolicies = (db: Db) => new PgPolicyStore(db, serviceEdgeRouterPolicyTable);
