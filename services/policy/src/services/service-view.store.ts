import type { ConfigState, ServiceState } from '@ziti/contracts';
import {
  type Db,
  date,
  json,
  listRows,
  positionsReflected,
  queryRows,
  roleFilterScope,
  toListPage,
} from '@ziti/platform';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { serviceQuery } from '../read-models/read-model-queries.store.ts';
import type { ServiceAccessRow, ServiceListScope, Viewer } from './service-view.domain.ts';
import type { ServiceViewStore } from './service-view.ports.ts';

interface AccessRow {
  state: unknown;
  dial: boolean | null;
  bind: boolean | null;
}
const accessRow = (r: AccessRow): ServiceAccessRow => ({
  service: json<ServiceState>(r.state),
  dial: r.dial === true,
  bind: r.bind === true,
});

/** The service view over policy's database: identity_services joined to the read models. */
export class PgServiceView implements ServiceViewStore {
  constructor(private readonly db: Db) {}

  async list(viewer: Viewer, input: ListInput, scope: ServiceListScope): Promise<ListPage<ServiceAccessRow>> {
    const params: unknown[] = [viewer.identityId];
    const parts = ['not e.deleted'];
    // Administrators see every service (ZITI-FACTS §6.3); others the services they have access to.
    if (!viewer.isAdmin) parts.push('e.id in (select v.service_id from viewer_access v)');
    if (scope.roleFilter) {
      const r = roleFilterScope(scope.roleFilter, 'e.role_attributes', 'e.id');
      parts.push(r.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + params.length}`));
      params.push(...r.params);
    }
    if (scope.configId !== undefined) {
      params.push(scope.configId);
      parts.push(`e.state -> 'configs' ? $${params.length}`);
    }
    const listed = await listRows<AccessRow>(this.db, serviceQuery, input, {
      with: {
        sql: 'viewer_access as (select service_id, dial, bind from identity_services where identity_id = $1)',
        params: [params[0]],
      },
      scope: { sql: parts.join(' and '), params: params.slice(1) },
      // The viewer's access joined to the page (a hash join), not looked up per row: two correlated
      // scans of the CTE per listed service were most of a 100-service page's time.
      columns: 'e.state',
      detail: { columns: 'v.dial, v.bind', join: 'left join viewer_access v on v.service_id = e.id' },
    });
    return toListPage(listed, accessRow);
  }

  async get(viewer: Viewer, id: string): Promise<ServiceAccessRow | undefined> {
    const [row] = await queryRows<AccessRow>(
      this.db,
      `select s.state, x.dial, x.bind from services s
         left join identity_services x on x.service_id = $1 and x.identity_id = $2
        where s.id = $1 and not s.deleted and ($3 or x.identity_id is not null)`,
      [id, viewer.identityId, viewer.isAdmin],
      { prepare: true },
    );
    return row ? accessRow(row) : undefined;
  }

  async access(viewer: Viewer, serviceIds: string[]): Promise<Map<string, { dial: boolean; bind: boolean }>> {
    if (serviceIds.length === 0) return new Map();
    const rows = await queryRows<{ service_id: string; dial: boolean; bind: boolean }>(
      this.db,
      'select service_id, dial, bind from identity_services where identity_id = $1 and service_id = any($2::text[])',
      [viewer.identityId, serviceIds],
      { prepare: true },
    );
    return new Map(rows.map((r) => [r.service_id, { dial: r.dial, bind: r.bind }]));
  }

  async identityByIdOrName(idOrName: string): Promise<{ id: string; isAdmin: boolean } | undefined> {
    const [row] = await queryRows<{ id: string; is_admin: boolean }>(
      this.db,
      `select id, is_admin from identities where not deleted and (id = $1 or name = $1)
        order by id = $1 desc limit 1`,
      [idOrName],
      { prepare: true },
    );
    return row ? { id: row.id, isAdmin: row.is_admin === true } : undefined;
  }

  async configTypeIds(idsOrNames: string[]): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.db,
      'select id from config_types where not deleted and (id = any($1::text[]) or name = any($1::text[]))',
      [idsOrNames],
      { prepare: true },
    );
    return rows.map((r) => r.id);
  }

  async configs(ids: string[]): Promise<ConfigState[]> {
    if (ids.length === 0) return [];
    const rows = await queryRows<{ state: unknown }>(
      this.db,
      'select state from configs where not deleted and id = any($1::text[])',
      [ids],
      { prepare: true },
    );
    return rows.map((r) => json<ConfigState>(r.state));
  }

  async configTypeNames(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await queryRows<{ id: string; name: string }>(
      this.db,
      'select id, name from config_types where not deleted and id = any($1::text[])',
      [ids],
      { prepare: true },
    );
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  async overrides(identityId: string): Promise<{ serviceId: string; configId: string }[]> {
    const [row] = await queryRows<{ state: unknown }>(
      this.db,
      'select state from identity_service_configs where id = $1 and not deleted',
      [identityId],
      { prepare: true },
    );
    if (!row) return [];
    return json<{ serviceConfigs: { serviceId: string; configId: string }[] }>(row.state).serviceConfigs;
  }

  /** Whether any posture check exists in the whole system (ZITI-FACTS §6.3 precision). */
  async postureChecksExist(): Promise<boolean> {
    return (await queryRows(this.db, 'select 1 from posture_checks limit 1')).length > 0;
  }

  async configExists(id: string): Promise<boolean> {
    return (
      (await queryRows(this.db, 'select 1 from configs where id = $1 and not deleted', [id], { prepare: true }))
        .length > 0
    );
  }

  async lastChange(identityId: string, isAdmin: boolean): Promise<Date | undefined> {
    const [row] = await queryRows<{ at: Date | string | null }>(
      this.db,
      'select max(changed_at) as at from identity_service_updates where identity_id = $1 or ($2 and identity_id = $3)',
      [identityId, isAdmin, '*'],
      { prepare: true },
    );
    return row?.at ? date(row.at) : undefined;
  }

  async apiSessionConfigTypes(apiSessionId: string): Promise<string[]> {
    const [row] = await queryRows<{ config_types: string[] }>(
      this.db,
      'select config_types from api_sessions where id = $1 and ended_at is null',
      [apiSessionId],
      { prepare: true },
    );
    return row?.config_types ?? [];
  }

  positionsReflected(): Promise<Record<string, number>> {
    return positionsReflected(this.db, 'policy', ['auth', 'inventory']);
  }

  async identityCreatedAt(identityId: string): Promise<Date | undefined> {
    const [row] = await queryRows<{ at: string | null }>(
      this.db,
      "select state->>'createdAt' as at from identities where id = $1",
      [identityId],
      { prepare: true },
    );
    return row?.at ? date(row.at) : undefined;
  }
}
