import type { IdentityState, ServiceState } from '@ziti/contracts';
import { type Db, json, listRows, queryRows, toListPage } from '@ziti/platform';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { ClientEdgeRouterStore } from '../client-edge-routers/client-edge-routers.ports.ts';
import type { Reachability } from '../policy-advice/policy-advice.domain.ts';
import type { AdviceStore } from '../policy-advice/policy-advice.ports.ts';
import {
  edgeRouterQuery,
  edgeRouterWithPresenceOf,
  identityRoutersOf as identityRouters,
  serviceRoutersOf as serviceRouters,
} from '../read-models/read-model-queries.store.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';

type Row = { state: unknown };
const stateOf = <S>(r: Row): S => json<S>(r.state);

/**
 * Reads of the access tables (docs/adr/0009) for the policy advice and the client's edge-router
 * lists: rows joined to the live read models, never policies evaluated at read time.
 */
export class PgAccessReads implements AdviceStore, ClientEdgeRouterStore {
  constructor(private readonly db: Db) {}

  private async live<S>(table: 'identities' | 'services', id: string): Promise<S | undefined> {
    const rows = await queryRows<Row>(this.db, `select state from ${table} where id = $1 and not deleted`, [id], {
      prepare: true,
    });
    return rows[0] ? stateOf<S>(rows[0]) : undefined;
  }

  identity(id: string): Promise<IdentityState | undefined> {
    return this.live<IdentityState>('identities', id);
  }

  service(id: string): Promise<ServiceState | undefined> {
    return this.live<ServiceState>('services', id);
  }

  /** One statement, so the flags, counts and common routers come from one snapshot. */
  async reachability(identityId: string, serviceId: string): Promise<Reachability> {
    const rows = await queryRows<{
      dial: boolean | null;
      bind: boolean | null;
      identity_routers: number;
      service_routers: number;
      common: unknown;
    }>(
      this.db,
      `select a.dial, a.bind,
              (select count(*)::int from edge_routers r
                where not r.deleted and r.id in (${identityRouters('$1')})) as identity_routers,
              (select count(*)::int from edge_routers r
                where not r.deleted and r.id in (${serviceRouters('$2')})) as service_routers,
              (select coalesce(jsonb_agg(${edgeRouterWithPresenceOf('r')} order by r.name collate "C", r.id collate "C"), '[]'::jsonb) from edge_routers r
                where not r.deleted and r.id in (${identityRouters('$1')}) and r.id in (${serviceRouters('$2')})) as common
         from (select 1) one
         left join identity_services a on a.identity_id = $1 and a.service_id = $2`,
      [identityId, serviceId],
    );
    const row = rows[0]!;
    return {
      dial: row.dial === true,
      bind: row.bind === true,
      identityRouterCount: row.identity_routers,
      serviceRouterCount: row.service_routers,
      commonRouters: json<EdgeRouterWithPresence[]>(row.common),
    };
  }

  private async routers(input: ListInput, scope: string, params: unknown[]): Promise<ListPage<EdgeRouterWithPresence>> {
    const alias = edgeRouterQuery.alias;
    const listed = await listRows<Row>(this.db, edgeRouterQuery, input, {
      scope: { sql: `not ${alias}.deleted and ${scope}`, params },
      columns: `${edgeRouterWithPresenceOf(alias)} as state`,
    });
    return toListPage(listed, (r) => stateOf<EdgeRouterWithPresence>(r));
  }

  verifiedEdgeRouters(identityId: string | undefined, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>> {
    const alias = edgeRouterQuery.alias;
    return identityId === undefined
      ? this.routers(input, `${alias}.is_verified`, [])
      : this.routers(input, `${alias}.is_verified and ${alias}.id in (${identityRouters('$1')})`, [identityId]);
  }

  async serviceVisible(serviceId: string, identityId: string, isAdmin: boolean): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `select 1 from services s where s.id = $1 and not s.deleted
          and ($3::boolean or exists (select 1 from identity_services x where x.service_id = $1 and x.identity_id = $2))`,
      [serviceId, identityId, isAdmin],
      { prepare: true },
    );
    return rows.length > 0;
  }

  sharedEdgeRouters(
    identityId: string,
    serviceId: string,
    input: ListInput,
  ): Promise<ListPage<EdgeRouterWithPresence>> {
    const alias = edgeRouterQuery.alias;
    return this.routers(
      input,
      `${alias}.id in (${identityRouters('$1')}) and ${alias}.id in (${serviceRouters('$2')})`,
      [identityId, serviceId],
    );
  }
}
