import { type QueryEntity, arraySet, baseEntityFields, defineQueryEntity, map, scalar, set } from '@ziti/zitiql';

/**
 * Filterable fields (ZITI-FACTS §3.5) of the read models' live rows, for the association lists.
 * What the table has as a column is read from the column; the rest from the owner's state.
 */
const base = (alias: string) => ({
  id: scalar(`${alias}.id`, 'string'),
  createdAt: scalar(`(${alias}.state->>'createdAt')::timestamptz`, 'datetime'),
  updatedAt: scalar(`(${alias}.state->>'updatedAt')::timestamptz`, 'datetime'),
  tags: map(`(${alias}.state->'tags')`),
  isSystem: scalar('false', 'boolean'),
  name: scalar(`${alias}.name`, 'string'),
  roleAttributes: arraySet(`${alias}.role_attributes`, 'string'),
});

const text = (alias: string, key: string) => `(${alias}.state->>'${key}')`;
const bool = (alias: string, key: string) => `(${alias}.state->>'${key}')::boolean`;

export const identityQuery: QueryEntity = defineQueryEntity({
  table: 'identities',
  alias: 'e',
  fields: {
    ...base('e'),
    externalId: scalar(text('e', 'externalId'), 'string'),
    type: scalar('e.type_id', 'string'),
    authPolicyId: scalar(text('e', 'authPolicyId'), 'string'),
    isAdmin: scalar('e.is_admin', 'boolean'),
    isDefaultAdmin: scalar(bool('e', 'isDefaultAdmin'), 'boolean'),
  },
});

export const serviceQuery: QueryEntity = defineQueryEntity({
  table: 'services',
  alias: 'e',
  fields: {
    ...base('e'),
    terminatorStrategy: scalar(text('e', 'terminatorStrategy'), 'string'),
    configs: arraySet("array(select jsonb_array_elements_text(e.state->'configs'))", 'string'),
  },
});

export const edgeRouterQuery: QueryEntity = defineQueryEntity({
  table: 'edge_routers',
  alias: 'e',
  fields: {
    ...base('e'),
    fingerprint: scalar(text('e', 'fingerprint'), 'string'),
    cost: scalar(`(e.state->>'cost')::numeric`, 'number'),
    noTraversal: scalar(bool('e', 'noTraversal'), 'boolean'),
    disabled: scalar(bool('e', 'disabled'), 'boolean'),
    isVerified: scalar('e.is_verified', 'boolean'),
    isTunnelerEnabled: scalar('e.is_tunneler_enabled', 'boolean'),
  },
});

/**
 * Posture checks, policy's own rows (ziti `controller/db/posture_check_store.go`): the base fields,
 * `name`, `roleAttributes`, the MFA flags `promptOnWake` / `promptOnUnlock`, the service policies
 * that select the check and the services those Bind / Dial policies grant.
 */
const servicesOfChecks = (type: 'Bind' | 'Dial') => (a: string) =>
  `select ps.service_id from service_policy_posture_checks x
     join service_policies p on p.id = x.policy_id and p.type = '${type}'
     join service_policy_services ps on ps.policy_id = x.policy_id
    where x.posture_check_id = ${a}.id`;

export const postureCheckQuery: QueryEntity = defineQueryEntity({
  table: 'posture_checks',
  alias: 'c',
  fields: {
    ...baseEntityFields('c'),
    name: scalar('c.name', 'string'),
    roleAttributes: arraySet('c.role_attributes', 'string'),
    promptOnWake: scalar("coalesce((c.data->>'promptOnWake')::boolean, false)", 'boolean'),
    promptOnUnlock: scalar("coalesce((c.data->>'promptOnUnlock')::boolean, false)", 'boolean'),
    servicePolicies: set(
      (a) => `select x.policy_id from service_policy_posture_checks x where x.posture_check_id = ${a}.id`,
      'string',
    ),
    bindServices: set(servicesOfChecks('Bind'), 'string'),
    dialServices: set(servicesOfChecks('Dial'), 'string'),
  },
});

/** The fixed posture check types (base fields and `name`). */
export const postureCheckTypeQuery: QueryEntity = defineQueryEntity({
  table: 'posture_check_types',
  alias: 't',
  fields: { ...baseEntityFields('t'), name: scalar('t.name', 'string') },
});
