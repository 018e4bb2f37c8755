import { type QueryEntity, arraySet, defineQueryEntity, map, scalar } from '@ziti/zitiql';
import { type Db, queryRows } from '@ziti/platform';

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

/** The presence state inventory last recorded for the edge router `alias`.id (null: never connected). */
export const routerPresenceOf = (alias: string) =>
  `(select p.state from router_presence p where p.id = ${alias}.id and not p.deleted)`;

/** Whether the edge router `alias`.id is online now, as inventory last recorded its presence. */
export const routerOnlineOf = (alias: string) =>
  `coalesce((select p.is_online from router_presence p where p.id = ${alias}.id and not p.deleted), false)`;

/**
 * The edge router `alias` with its presence, as one JSON value (`EdgeRouterWithPresence`): its state
 * and `presence` (null when inventory never recorded one). Every read that shows routers selects it.
 */
export const edgeRouterWithPresenceOf = (alias: string) =>
  `(${alias}.state || jsonb_build_object('presence', ${routerPresenceOf(alias)}))`;

/** Ids of the live edge routers an identity (the SQL expression `identity`) reaches through its edge-router policies. */
export const identityRoutersOf = (identity: string) =>
  `select x.edge_router_id from identity_edge_routers x where x.identity_id = ${identity}`;

/** Ids of the live edge routers a service (the SQL expression `service`) reaches through its service-edge-router policies. */
export const serviceRoutersOf = (service: string) =>
  `select x.edge_router_id from service_edge_routers x where x.service_id = ${service}`;

/**
 * Whether a live service is visible to an identity: to an admin any live service, else one it may
 * dial or bind (`identity_services`). One indexed probe; the client's edge routers and terminators of
 * a service ask it before they list.
 */
export async function serviceVisible(db: Db, serviceId: string, identityId: string, isAdmin: boolean) {
  const rows = await queryRows(
    db,
    `select 1 from services s where s.id = $1 and not s.deleted
        and ($3::boolean or exists (select 1 from identity_services x where x.service_id = $1 and x.identity_id = $2))`,
    [serviceId, identityId, isAdmin],
    { prepare: true },
  );
  return rows.length > 0;
}

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
    // The reference's edge-router store adds both as public symbols (ziti `edge_router_manager.go`:
    // `connected` is the fabric's control channel, `online` the edge sync's view of it); both are
    // the router's presence here. `connected desc` is how the reference orders a session's routers.
    connected: scalar(routerOnlineOf('e'), 'boolean'),
    online: scalar(routerOnlineOf('e'), 'boolean'),
  },
});
