import type { IdentityState, ServiceState } from '@ziti/contracts';
import { type Db, json, listRows, queryRows, toListPage } from '@ziti/platform';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { QueryEntity } from '@ziti/zitiql';
import type { PolicyKind } from '../access/access.ports.ts';
import { edgeRouterPolicyTable } from '../policies/edge-router-policies.store.ts';
import type { PostureCheck } from '../posture/posture-checks.domain.ts';
import { postureCheckFromRow, postureCheckQuery } from '../posture/posture-checks.store.ts';
import {
  edgeRouterQuery,
  edgeRouterWithPresenceOf,
  identityQuery,
  serviceQuery,
} from '../read-models/read-model-queries.store.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import { serviceEdgeRouterPolicyTable } from '../policies/service-edge-router-policies.store.ts';
import { servicePolicyTable } from '../policies/service-policies.store.ts';
import { type LinkedEntities, linkTableOf } from '../access/link-tables.store.ts';
import type { Policy } from '../policies/policies.domain.ts';
import { listPolicies } from '../policies/policies.store.ts';
import type { Relation, RelationSource } from './relations.domain.ts';
import type { RelationStore } from './relations.ports.ts';

/** Where each source lives: live read-model rows, or policy rows. */
const sourceTables: Record<RelationSource, { table: string; live: boolean }> = {
  identity: { table: 'identities', live: true },
  service: { table: 'services', live: true },
  edgeRouter: { table: 'edge_routers', live: true },
  servicePolicy: { table: 'service_policies', live: false },
  edgeRouterPolicy: { table: 'edge_router_policies', live: false },
  serviceEdgeRouterPolicy: { table: 'service_edge_router_policies', live: false },
};

/** A derived table read from one side: the rows whose `from` column is the source, their `to` column. */
interface Link {
  table: string;
  from: string;
  to: string;
}

type Target = 'identities' | 'services' | 'edgeRouters' | PolicyKind;

/** A policy's links read from the policy (its entities) or from the entity (its policies). */
const fromPolicy = (kind: PolicyKind, entities: LinkedEntities): Link => {
  const l = linkTableOf(kind, entities);
  return { table: l.table, from: 'policy_id', to: l.column };
};
const toPolicy = (kind: PolicyKind, entities: LinkedEntities): Link => {
  const l = linkTableOf(kind, entities);
  return { table: l.table, from: l.column, to: 'policy_id' };
};

/**
 * Which derived table answers "the <target> related to a <source>" (docs/adr/0009): a policy's own
 * links, or the access derived from them (identity_services, identity_edge_routers,
 * service_edge_routers).
 */
const linkOf: Partial<Record<Target, Partial<Record<RelationSource, Link>>>> = {
  identities: {
    servicePolicy: fromPolicy('service', 'identities'),
    edgeRouterPolicy: fromPolicy('edgeRouter', 'identities'),
    service: { table: 'identity_services', from: 'service_id', to: 'identity_id' },
    edgeRouter: { table: 'identity_edge_routers', from: 'edge_router_id', to: 'identity_id' },
  },
  services: {
    servicePolicy: fromPolicy('service', 'services'),
    serviceEdgeRouterPolicy: fromPolicy('serviceEdgeRouter', 'services'),
    identity: { table: 'identity_services', from: 'identity_id', to: 'service_id' },
    edgeRouter: { table: 'service_edge_routers', from: 'edge_router_id', to: 'service_id' },
  },
  edgeRouters: {
    edgeRouterPolicy: fromPolicy('edgeRouter', 'edge_routers'),
    serviceEdgeRouterPolicy: fromPolicy('serviceEdgeRouter', 'edge_routers'),
    identity: { table: 'identity_edge_routers', from: 'identity_id', to: 'edge_router_id' },
    service: { table: 'service_edge_routers', from: 'service_id', to: 'edge_router_id' },
  },
  service: {
    identity: toPolicy('service', 'identities'),
    service: toPolicy('service', 'services'),
  },
  edgeRouter: {
    identity: toPolicy('edgeRouter', 'identities'),
    edgeRouter: toPolicy('edgeRouter', 'edge_routers'),
  },
  serviceEdgeRouter: {
    service: toPolicy('serviceEdgeRouter', 'services'),
    edgeRouter: toPolicy('serviceEdgeRouter', 'edge_routers'),
  },
};

type Row = { state: unknown };
const stateOf = <S>(r: Row): S => json<S>(r.state);

/** The association lists over the derived tables, filtered and paged by ZitiQL on the related rows. */
export class PgRelations implements RelationStore {
  constructor(private readonly db: Db) {}

  async exists(source: RelationSource, id: string): Promise<boolean> {
    const { table, live } = sourceTables[source];
    const rows = await queryRows(this.db, `select 1 from ${table} where id = $1${live ? ' and not deleted' : ''}`, [
      id,
    ]);
    return rows.length > 0;
  }

  /** The related ids of `of` as a condition on `alias`.id; `accessType` narrows identity_services. */
  private scope(target: Target, of: Relation, alias: string): { sql: string; params: unknown[] } {
    const link = linkOf[target]?.[of.from];
    if (!link) throw new Error(`no derived table relates ${of.from} to ${target}`);
    const access =
      of.accessType && link.table === 'identity_services' ? ` and x.${of.accessType === 'dial' ? 'dial' : 'bind'}` : '';
    return {
      sql: `${alias}.id in (select x.${link.to} from ${link.table} x where x.${link.from} = $1${access})`,
      params: [of.id],
    };
  }

  /** `state`: what each row answers (its state, or for edge routers its state with its presence). */
  private async entities<S>(
    target: Target,
    query: QueryEntity,
    of: Relation,
    input: ListInput,
    state = `${query.alias}.state`,
  ): Promise<ListPage<S>> {
    const scope = this.scope(target, of, query.alias);
    const listed = await listRows<Row>(this.db, query, input, {
      scope: { sql: `not ${query.alias}.deleted and ${scope.sql}`, params: scope.params },
      columns: `${state} as state`,
    });
    return toListPage(listed, (r) => stateOf<S>(r));
  }

  identities(of: Relation, input: ListInput): Promise<ListPage<IdentityState>> {
    return this.entities('identities', identityQuery, of, input);
  }

  services(of: Relation, input: ListInput): Promise<ListPage<ServiceState>> {
    return this.entities('services', serviceQuery, of, input);
  }

  edgeRouters(of: Relation, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>> {
    return this.entities('edgeRouters', edgeRouterQuery, of, input, edgeRouterWithPresenceOf(edgeRouterQuery.alias));
  }

  policies(kind: PolicyKind, of: Relation, input: ListInput): Promise<ListPage<Policy>> {
    const table = {
      service: servicePolicyTable,
      edgeRouter: edgeRouterPolicyTable,
      serviceEdgeRouter: serviceEdgeRouterPolicyTable,
    }[kind];
    return listPolicies(this.db, table, input, this.scope(kind, of, table.query.alias));
  }

  async postureChecks(of: Relation, input: ListInput): Promise<ListPage<PostureCheck>> {
    if (of.from !== 'servicePolicy') throw new Error(`no derived table relates ${of.from} to posture checks`);
    const link = fromPolicy('service', 'posture_checks');
    const listed = await listRows<Record<string, unknown>>(this.db, postureCheckQuery, input, {
      scope: {
        sql: `c.id in (select x.${link.to} from ${link.table} x where x.${link.from} = $1)`,
        params: [of.id],
      },
    });
    return toListPage(listed, postureCheckFromRow);
  }
}
