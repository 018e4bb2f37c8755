import { type QueryEntity, arraySet, defineQueryEntity, map, scalar } from '@ziti/zitiql';

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
