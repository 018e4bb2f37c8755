import type { IdentityState, ServiceState } from '@ziti/contracts';
import { type Db, json, queryRows } from '@ziti/platform';
import {
  edgeRouterWithPresenceOf,
  identityRoutersOf as identityRouters,
  serviceRoutersOf as serviceRouters,
} from '../read-models/read-model-queries.store.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { Reachability } from './policy-advice.domain.ts';
import type { AdviceStore } from './policy-advice.ports.ts';

type Row = { state: unknown };

/**
 * What the policy advice reads: the live read models and the access tables (docs/adr/0009), rows
 * joined to the live read models, never policies evaluated at read time.
 */
export class PgAdvice implements AdviceStore {
  constructor(private readonly db: Db) {}

  private async live<S>(table: 'identities' | 'services', id: string): Promise<S | undefined> {
    const rows = await queryRows<Row>(this.db, `select state from ${table} where id = $1 and not deleted`, [id], {
      prepare: true,
    });
    return rows[0] ? json<S>(rows[0].state) : undefined;
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
}
