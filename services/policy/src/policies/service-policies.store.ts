import type { Db } from '@ziti/platform';
import { type QueryEntity, arraySet, defineQueryEntity, scalar } from '@ziti/zitiql';
import { linkTableOf } from '../access/link-tables.store.ts';
import { PgPolicyStore, type PolicyTable, commonPolicyFields, linked } from './policies.store.ts';

/**
 * Filterable fields of service policies (ZITI-FACTS §3.5). A service policy's `type` is an integer in
 * the reference's store (Dial = 1, Bind = 2): clients and the controller filter `type = 1`.
 */
export const servicePolicyQuery: QueryEntity = defineQueryEntity({
  table: 'service_policies',
  alias: 'p',
  fields: {
    ...commonPolicyFields('p'),
    type: scalar("(case p.type when 'Dial' then 1 else 2 end)", 'number'),
    identityRoles: arraySet('p.identity_roles', 'string'),
    serviceRoles: arraySet('p.service_roles', 'string'),
    postureCheckRoles: arraySet('p.posture_check_roles', 'string'),
    ...linked('identities', linkTableOf('service', 'identities')),
    ...linked('services', linkTableOf('service', 'services')),
  },
});

/** The kind's table, as the relation lists read it too. */
export const servicePolicyTable: PolicyTable = {
  table: 'service_policies',
  store: 'servicePolicies',
  roles: {
    identityRoles: 'identity_roles',
    serviceRoles: 'service_roles',
    postureCheckRoles: 'posture_check_roles',
  },
  hasType: true,
  hasIsSystem: false,
  query: servicePolicyQuery,
};

export const pgServicePolicies = (db: Db) => new PgPolicyStore(db, servicePolicyTable);
