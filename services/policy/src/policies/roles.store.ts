import { type Db, queryRows } from '@ziti/platform';
import type { RoleTarget } from './roles.domain.ts';
import type { RoleTargets } from './roles.ports.ts';

/** The tables `@id` roles point into: read models (live rows only) and policy's own posture checks. */
export const roleTargetTables: Record<RoleTarget, { table: string; live: string }> = {
  identities: { table: 'identities', live: 'not deleted' },
  services: { table: 'services', live: 'not deleted' },
  edgeRouters: { table: 'edge_routers', live: 'not deleted' },
  postureChecks: { table: 'posture_checks', live: 'true' },
};

/** `@id` roles resolved against policy's read models (live rows only, tombstones excluded) and posture checks. */
export class PgRoleTargets implements RoleTargets {
  constructor(private readonly db: Db) {}

  async names(target: RoleTarget, ids: string[]): Promise<Map<string, string>> {
    const { table, live } = roleTargetTables[target];
    if (ids.length === 0) return new Map();
    const rows = await queryRows<{ id: string; name: string }>(
      this.db,
      `select id, name from ${table} where id = any($1::text[]) and ${live}`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  async existing(target: RoleTarget, ids: string[]): Promise<Set<string>> {
    return new Set((await this.names(target, ids)).keys());
  }
}
