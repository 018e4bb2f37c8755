import {
  type FieldDef,
  type QueryEntity,
  arraySet,
  baseEntityFields,
  defineQueryEntity,
  scalar,
  set,
} from '@ziti/zitiql';

/**
 * A to-many relation of a policy through one of its link tables (docs/adr/0009): `anyOf(<name>) = "id"`
 * over the linked ids and `anyOf(<name>.name) = "x"` over the linked live entities' names.
 */
function linked(name: string, links: string, column: string, entities: string): Record<string, FieldDef> {
  return {
    [name]: set((a) => `select x.${column} from ${links} x where x.policy_id = ${a}.id`, 'string'),
    [`${name}.name`]: set(
      (a) =>
        `select e.name from ${links} x join ${entities} e on e.id = x.${column} and not e.deleted where x.policy_id = ${a}.id`,
      'string',
    ),
  };
}

const common = (alias: string) => ({
  ...baseEntityFields(alias),
  name: scalar(`${alias}.name`, 'string'),
  semantic: scalar(`${alias}.semantic`, 'string'),
});

/**
 * Filterable fields of the policies (ZITI-FACTS §3.5). A service policy's `type` is an integer in
 * the reference's store (Dial = 1, Bind = 2): clients and the controller filter `type = 1`.
 */
export const servicePolicyQuery: QueryEntity = defineQueryEntity({
  table: 'service_policies',
  alias: 'p',
  fields: {
    ...common('p'),
    type: scalar("(case p.type when 'Dial' then 1 else 2 end)", 'number'),
    identityRoles: arraySet('p.identity_roles', 'string'),
    serviceRoles: arraySet('p.service_roles', 'string'),
    postureCheckRoles: arraySet('p.posture_check_roles', 'string'),
    ...linked('identities', 'service_policy_identities', 'identity_id', 'identities'),
    ...linked('services', 'service_policy_services', 'service_id', 'services'),
  },
});

export const edgeRouterPolicyQuery: QueryEntity = defineQueryEntity({
  table: 'edge_router_policies',
  alias: 'p',
  fields: {
    ...common('p'),
    isSystem: scalar('p.is_system', 'boolean'),
    identityRoles: arraySet('p.identity_roles', 'string'),
    edgeRouterRoles: arraySet('p.edge_router_roles', 'string'),
    ...linked('identities', 'edge_router_policy_identities', 'identity_id', 'identities'),
    ...linked('edgeRouters', 'edge_router_policy_edge_routers', 'edge_router_id', 'edge_routers'),
  },
});

export const serviceEdgeRouterPolicyQuery: QueryEntity = defineQueryEntity({
  table: 'service_edge_router_policies',
  alias: 'p',
  fields: {
    ...common('p'),
    serviceRoles: arraySet('p.service_roles', 'string'),
    edgeRouterRoles: arraySet('p.edge_router_roles', 'string'),
    ...linked('services', 'service_edge_router_policy_services', 'service_id', 'services'),
    ...linked('edgeRouters', 'service_edge_router_policy_edge_routers', 'edge_router_id', 'edge_routers'),
  },
});
