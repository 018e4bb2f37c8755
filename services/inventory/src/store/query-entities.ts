import { arraySet, baseEntityFields, defineQueryEntity, map, scalar, set } from '@ziti/zitiql';

const base = baseEntityFields;

/** Filterable fields per type, as the reference's stores publish them (ZITI-FACTS §3.5). */
export const configTypeQuery = defineQueryEntity({
  table: 'config_types',
  alias: 't',
  fields: { ...base('t'), name: scalar('t.name', 'string'), schema: map('t.schema') },
});

export const configQuery = defineQueryEntity({
  table: 'configs',
  alias: 'c',
  fields: {
    ...base('c'),
    name: scalar('c.name', 'string'),
    type: scalar('c.config_type_id', 'string'),
    'type.name': scalar((a) => `(select x.name from config_types x where x.id = ${a}.config_type_id)`, 'string'),
    data: map('c.data'),
    services: set((a) => `select x.service_id from service_configs x where x.config_id = ${a}.id`, 'string'),
  },
});

export const serviceQuery = defineQueryEntity({
  table: 'services',
  alias: 's',
  fields: {
    ...base('s'),
    name: scalar('s.name', 'string'),
    terminatorStrategy: scalar('s.terminator_strategy', 'string'),
    roleAttributes: arraySet('s.role_attributes', 'string'),
    configs: set((a) => `select x.config_id from service_configs x where x.service_id = ${a}.id`, 'string'),
  },
});

const routerFields = (alias: string) => ({
  ...base(alias),
  name: scalar(`${alias}.name`, 'string'),
  fingerprint: scalar(`${alias}.fingerprint`, 'string'),
  cost: scalar(`${alias}.cost`, 'number'),
  noTraversal: scalar(`${alias}.no_traversal`, 'boolean'),
  disabled: scalar(`${alias}.disabled`, 'boolean'),
  isVerified: scalar(`${alias}.is_verified`, 'boolean'),
});

export const edgeRouterQuery = defineQueryEntity({
  table: 'routers',
  alias: 'r',
  fields: {
    ...routerFields('r'),
    roleAttributes: arraySet('r.role_attributes', 'string'),
    isTunnelerEnabled: scalar('r.is_tunneler_enabled', 'boolean'),
  },
});

export const transitRouterQuery = defineQueryEntity({
  table: 'routers',
  alias: 'r',
  fields: routerFields('r'),
});

export const terminatorQuery = defineQueryEntity({
  table: 'terminators',
  alias: 't',
  fields: {
    ...base('t'),
    binding: scalar('t.binding', 'string'),
    address: scalar('t.address', 'string'),
    instanceId: scalar('t.instance_id', 'string'),
    hostId: scalar('t.host_id', 'string'),
    cost: scalar('t.cost', 'number'),
    precedence: scalar('t.precedence', 'string'),
    service: scalar('t.service_id', 'string'),
    router: scalar('t.router_id', 'string'),
    'service.name': scalar((a) => `(select x.name from services x where x.id = ${a}.service_id)`, 'string'),
    'router.name': scalar((a) => `(select x.name from routers x where x.id = ${a}.router_id)`, 'string'),
  },
});
