import { type Db, queryRows } from '@ziti/platform';
import {
  type AccessChanges,
  accessEventPairLimit,
  type AccessLinks,
  type LinkDifference,
  type PolicyKind,
  type ServiceUpdateScope,
  type Touched,
} from '../domain/access.ts';

/** One link table: a policy table's roles selecting the live rows of a read model. */
interface LinkTable {
  table: string;
  column: string;
  entities: 'identities' | 'services' | 'edge_routers' | 'posture_checks';
  roles: string;
  policies: string;
}

const links: Record<PolicyKind, LinkTable[]> = {
  service: [
    {
      table: 'service_policy_identities',
      column: 'identity_id',
      entities: 'identities',
      roles: 'identity_roles',
      policies: 'service_policies',
    },
    {
      table: 'service_policy_services',
      column: 'service_id',
      entities: 'services',
      roles: 'service_roles',
      policies: 'service_policies',
    },
    {
      table: 'service_policy_posture_checks',
      column: 'posture_check_id',
      entities: 'posture_checks',
      roles: 'posture_check_roles',
      policies: 'service_policies',
    },
  ],
  edgeRouter: [
    {
      table: 'edge_router_policy_identities',
      column: 'identity_id',
      entities: 'identities',
      roles: 'identity_roles',
      policies: 'edge_router_policies',
    },
    {
      table: 'edge_router_policy_edge_routers',
      column: 'edge_router_id',
      entities: 'edge_routers',
      roles: 'edge_router_roles',
      policies: 'edge_router_policies',
    },
  ],
  serviceEdgeRouter: [
    {
      table: 'service_edge_router_policy_services',
      column: 'service_id',
      entities: 'services',
      roles: 'service_roles',
      policies: 'service_edge_router_policies',
    },
    {
      table: 'service_edge_router_policy_edge_routers',
      column: 'edge_router_id',
      entities: 'edge_routers',
      roles: 'edge_router_roles',
      policies: 'service_edge_router_policies',
    },
  ],
};
const allLinks = Object.values(links).flat();

/** Posture checks are policy's own rows (no tombstones); the rest are read models. */
const live = (l: LinkTable) => (l.entities === 'posture_checks' ? 'true' : 'not e.deleted');

/** The links a table should hold, from current policies and read models. */
const selected = (l: LinkTable, where = 'true') =>
  `select p.id as policy_id, e.id as ${l.column} from ${l.policies} p
     join ${l.entities} e on ${live(l)} and roles_match(p.${l.roles}, p.semantic, e.id, e.role_attributes)
    where ${where}`;

/** Access rows from link tables (real ones, or the expected ones as subqueries). */
const access = {
  identityServices: (t: (name: string) => string, where = 'true') =>
    `select pi.identity_id, ps.service_id, bool_or(p.type = 'Dial') as dial, bool_or(p.type = 'Bind') as bind
       from ${t('service_policy_identities')} pi
       join service_policies p on p.id = pi.policy_id
       join ${t('service_policy_services')} ps on ps.policy_id = pi.policy_id
      where ${where} group by pi.identity_id, ps.service_id`,
  identityEdgeRouters: (t: (name: string) => string, where = 'true') =>
    `select distinct pi.identity_id, pr.edge_router_id
       from ${t('edge_router_policy_identities')} pi
       join ${t('edge_router_policy_edge_routers')} pr on pr.policy_id = pi.policy_id
      where ${where}`,
  serviceEdgeRouters: (t: (name: string) => string, where = 'true') =>
    `select distinct ps.service_id, pr.edge_router_id
       from ${t('service_edge_router_policy_services')} ps
       join ${t('service_edge_router_policy_edge_routers')} pr on pr.policy_id = ps.policy_id
      where ${where}`,
};
const real = (name: string) => name;
const expected = (name: string) => `(${selected(allLinks.find((l) => l.table === name)!)})`;

const touchedKey: Record<LinkTable['entities'], keyof Touched> = {
  identities: 'identities',
  services: 'services',
  edge_routers: 'edgeRouters',
  posture_checks: 'postureChecks',
};

/** Advisory lock key of the derivations of the policy database. */
const derivationLock = 7_355_610;

/** The derived tables of docs/adr/0009 in Postgres (set-based SQL; `roles_match` is in the migration). */
export class PgAccessLinks implements AccessLinks {
  constructor(private readonly db: Db) {}

  async lock(): Promise<void> {
    await queryRows(this.db, 'select pg_advisory_xact_lock($1)', [derivationLock]);
  }

  async relinkPolicy(kind: PolicyKind, policyId: string): Promise<Touched> {
    const touched: Touched = { identities: [], services: [], edgeRouters: [] };
    for (const l of links[kind]) {
      const old = await queryRows<Record<string, string>>(
        this.db,
        `delete from ${l.table} where policy_id = $1 returning ${l.column}`,
        [policyId],
      );
      const now = await queryRows<Record<string, string>>(
        this.db,
        `insert into ${l.table} (policy_id, ${l.column}) ${selected(l, 'p.id = $1')} returning ${l.column}`,
        [policyId],
      );
      touched[touchedKey[l.entities]] = [...new Set([...old, ...now].map((r) => r[l.column]!))];
    }
    return touched;
  }

  private async relinkEntity(entities: LinkTable['entities'], id: string): Promise<void> {
    for (const l of allLinks.filter((x) => x.entities === entities)) {
      await queryRows(this.db, `delete from ${l.table} where ${l.column} = $1`, [id]);
      await queryRows(this.db, `insert into ${l.table} (policy_id, ${l.column}) ${selected(l, 'e.id = $1')}`, [id]);
    }
  }

  relinkIdentity(identityId: string): Promise<void> {
    return this.relinkEntity('identities', identityId);
  }

  relinkService(serviceId: string): Promise<void> {
    return this.relinkEntity('services', serviceId);
  }

  relinkEdgeRouter(edgeRouterId: string): Promise<void> {
    return this.relinkEntity('edge_routers', edgeRouterId);
  }

  async relinkPostureCheck(postureCheckId: string): Promise<string[]> {
    const l = allLinks.find((x) => x.entities === 'posture_checks')!;
    const old = await queryRows<{ policy_id: string }>(
      this.db,
      `delete from ${l.table} where ${l.column} = $1 returning policy_id`,
      [postureCheckId],
    );
    const now = await queryRows<{ policy_id: string }>(
      this.db,
      `insert into ${l.table} (policy_id, ${l.column}) ${selected(l, 'e.id = $1')} returning policy_id`,
      [postureCheckId],
    );
    return [...new Set([...old, ...now].map((r) => r.policy_id))].sort();
  }

  private async refresh(table: string, columns: string, where: string, select: string, params: unknown[]) {
    await queryRows(this.db, `delete from ${table} where ${where}`, params);
    await queryRows(this.db, `insert into ${table} (${columns}) ${select}`, params);
  }

  /**
   * Brings identity_services rows in `where` to what the links say, touching only rows that
   * differ. The changed pairs (a lost pair with dial and bind false) stay in Postgres: only their
   * count, the identities and — up to `accessEventPairLimit` — the pairs come back, so a change of
   * millions of pairs (an `#all` policy in a large network) never crosses into the process.
   */
  private async syncIdentityServices(where: string, select: string, params: unknown[]): Promise<AccessChanges> {
    await queryRows(
      this.db,
      `create temp table if not exists access_changes
         (identity_id text not null, service_id text not null, dial boolean not null, bind boolean not null)
         on commit delete rows`,
    );
    await queryRows(this.db, 'truncate access_changes');
    await queryRows(
      this.db,
      `with want as (${select}),
            lost as (delete from identity_services t where ${where.replaceAll('identity_services.', 't.')}
                       and not exists (select 1 from want w where w.identity_id = t.identity_id and w.service_id = t.service_id)
                     returning t.identity_id, t.service_id, false as dial, false as bind),
            kept as (insert into identity_services (identity_id, service_id, dial, bind) select * from want
                     on conflict (identity_id, service_id) do update set dial = excluded.dial, bind = excluded.bind
                     where (identity_services.dial, identity_services.bind) is distinct from (excluded.dial, excluded.bind)
                     returning identity_id, service_id, dial, bind)
       insert into access_changes select * from lost union all select * from kept`,
      params,
    );
    const [count] = await queryRows<{ pairs: number; identities: string[] | null }>(
      this.db,
      'select count(*)::int as pairs, array_agg(distinct identity_id order by identity_id) as identities from access_changes',
    );
    const pairs = count?.pairs ?? 0;
    const identityIds = count?.identities ?? [];
    if (pairs === 0 || pairs > accessEventPairLimit) return { pairs, identityIds, changes: null };
    const rows = await queryRows<{ identity_id: string; service_id: string; dial: boolean; bind: boolean }>(
      this.db,
      'select identity_id, service_id, dial, bind from access_changes order by identity_id, service_id',
    );
    return {
      pairs,
      identityIds,
      changes: rows.map((r) => ({ identityId: r.identity_id, serviceId: r.service_id, dial: r.dial, bind: r.bind })),
    };
  }

  refreshIdentityServices(identityIds: string[]): Promise<AccessChanges> {
    if (identityIds.length === 0) return Promise.resolve({ pairs: 0, identityIds: [], changes: null });
    return this.syncIdentityServices(
      'identity_services.identity_id = any($1::text[])',
      access.identityServices(real, 'pi.identity_id = any($1::text[])'),
      [identityIds],
    );
  }

  refreshServiceAccess(serviceId: string): Promise<AccessChanges> {
    return this.syncIdentityServices(
      'identity_services.service_id = $1',
      access.identityServices(real, 'ps.service_id = $1'),
      [serviceId],
    );
  }

  async markServiceUpdates(scope: ServiceUpdateScope): Promise<void> {
    const who = {
      identities: 'select unnest($1::text[])',
      service: 'select identity_id from identity_services where service_id = $1',
      config: `select x.identity_id from identity_services x join services s on s.id = x.service_id and not s.deleted
                where s.state -> 'configs' ? $1`,
      configType: `select x.identity_id from identity_services x join services s on s.id = x.service_id and not s.deleted
                    where exists (select 1 from configs c where not c.deleted and c.config_type_id = $1
                                    and s.state -> 'configs' ? c.id)`,
      servicePolicies: 'select identity_id from service_policy_identities where policy_id = any($1::text[])',
      all: 'select distinct identity_id from identity_services where $1::text is null',
    }[scope.kind];
    const param =
      scope.kind === 'identities' || scope.kind === 'servicePolicies'
        ? scope.ids
        : scope.kind === 'all'
          ? null
          : scope.id;
    if ((scope.kind === 'identities' || scope.kind === 'servicePolicies') && scope.ids.length === 0) return;
    await queryRows(
      this.db,
      `insert into identity_service_updates (identity_id, changed_at)
         select distinct w.id, statement_timestamp() from (${who}) as w(id) where w.id is not null
         union select '*', statement_timestamp()
       on conflict (identity_id) do update
         set changed_at = greatest(identity_service_updates.changed_at, excluded.changed_at)`,
      [param],
    );
  }

  async refreshIdentityEdgeRouters(identityIds: string[]): Promise<void> {
    if (identityIds.length === 0) return;
    await this.refresh(
      'identity_edge_routers',
      'identity_id, edge_router_id',
      'identity_id = any($1::text[])',
      access.identityEdgeRouters(real, 'pi.identity_id = any($1::text[])'),
      [identityIds],
    );
  }

  async refreshEdgeRouterAccess(edgeRouterId: string): Promise<void> {
    await this.refresh(
      'identity_edge_routers',
      'identity_id, edge_router_id',
      'edge_router_id = $1',
      access.identityEdgeRouters(real, 'pr.edge_router_id = $1'),
      [edgeRouterId],
    );
    await this.refresh(
      'service_edge_routers',
      'service_id, edge_router_id',
      'edge_router_id = $1',
      access.serviceEdgeRouters(real, 'pr.edge_router_id = $1'),
      [edgeRouterId],
    );
  }

  async refreshServiceEdgeRouters(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return;
    await this.refresh(
      'service_edge_routers',
      'service_id, edge_router_id',
      'service_id = any($1::text[])',
      access.serviceEdgeRouters(real, 'ps.service_id = any($1::text[])'),
      [serviceIds],
    );
  }

  async rebuildAll(): Promise<AccessChanges> {
    for (const l of allLinks) {
      await queryRows(this.db, `delete from ${l.table}`);
      await queryRows(this.db, `insert into ${l.table} (policy_id, ${l.column}) ${selected(l)}`);
    }
    const changes = await this.syncIdentityServices('true', access.identityServices(real), []);
    await this.refresh(
      'identity_edge_routers',
      'identity_id, edge_router_id',
      'true',
      access.identityEdgeRouters(real),
      [],
    );
    await this.refresh(
      'service_edge_routers',
      'service_id, edge_router_id',
      'true',
      access.serviceEdgeRouters(real),
      [],
    );
    return changes;
  }

  async differences(): Promise<LinkDifference[]> {
    const derived: { table: string; columns: string; expected: string }[] = [
      ...allLinks.map((l) => ({ table: l.table, columns: `policy_id, ${l.column}`, expected: selected(l) })),
      {
        table: 'identity_services',
        columns: 'identity_id, service_id, dial, bind',
        expected: access.identityServices(expected),
      },
      {
        table: 'identity_edge_routers',
        columns: 'identity_id, edge_router_id',
        expected: access.identityEdgeRouters(expected),
      },
      {
        table: 'service_edge_routers',
        columns: 'service_id, edge_router_id',
        expected: access.serviceEdgeRouters(expected),
      },
    ];
    const out: LinkDifference[] = [];
    for (const d of derived) {
      const [row] = await queryRows<{ missing: number; extra: number }>(
        this.db,
        `with want as (${d.expected}), have as (select ${d.columns} from ${d.table})
         select (select count(*)::int from (select * from want except select * from have) m) as missing,
                (select count(*)::int from (select * from have except select * from want) x) as extra`,
      );
      if (row && (row.missing > 0 || row.extra > 0))
        out.push({ table: d.table, missing: row.missing, extra: row.extra });
    }
    return out;
  }
}
