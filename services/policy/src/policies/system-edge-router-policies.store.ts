import { type Db, date, queryRows } from '@ziti/platform';
import type { SystemEdgeRouterPolicyStore, TunnelerRouter } from './system-edge-router-policies.ports.ts';

/** The system edge-router policies and the read model of the routers they follow, in Postgres. */
export class PgSystemEdgeRouterPolicies implements SystemEdgeRouterPolicyStore {
  constructor(private readonly db: Db) {}

  async tunnelerRouters(ids?: string[]): Promise<TunnelerRouter[]> {
    const rows = await queryRows<{ id: string; updated_at: string }>(
      this.db,
      `select id, state ->> 'updatedAt' as updated_at from edge_routers
        where not deleted and is_tunneler_enabled and ($1::text[] is null or id = any($1::text[]))
        order by id`,
      [ids ?? null],
    );
    return rows.map((r) => ({ id: r.id, updatedAt: date(r.updated_at) }));
  }

  async systemPolicyIds(ids?: string[]): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.db,
      `select id from edge_router_policies where is_system and ($1::text[] is null or id = any($1::text[])) order by id`,
      [ids ?? null],
    );
    return rows.map((r) => r.id);
  }

  async policyNamed(name: string): Promise<string | undefined> {
    const rows = await queryRows<{ id: string }>(this.db, 'select id from edge_router_policies where name = $1', [
      name,
    ]);
    return rows[0]?.id;
  }
}
