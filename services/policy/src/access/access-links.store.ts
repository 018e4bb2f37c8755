import { type Db, isEmbedded, queryRows } from '@ziti/platform';
import { type LinkTable, allLinkTables, policyLinkTables, touchedKey } from './link-tables.store.ts';
import { accessEventPairLimit } from './access.domain.ts';
import type {
  AccessChanges,
  AccessLinks,
  AccessScope,
  LinkDifference,
  PolicyKind,
  ServiceUpdateScope,
  Touched,
} from './access.ports.ts';

/** Posture checks are policy's own rows (no tombstones); the rest are read models. */
const live = (l: LinkTable) => (l.entities === 'posture_checks' ? 'true' : 'not e.deleted');

/** The columns of a link table. */
const columns = (l: LinkTable) => `policy_id, ${l.column}${l.carry ? `, ${l.carry}` : ''}`;

/** The links a table should hold, from current policies and read models. */
const selected = (l: LinkTable, where = 'true') =>
  `select p.id as policy_id, e.id as ${l.column}${l.carry ? `, p.${l.carry}` : ''} from ${l.policies} p
     join ${l.entities} e on ${live(l)}
      and roles_select(p.${l.roles}, p.${l.roles.replace(/_roles$/, '_role_attributes')}, p.semantic, e.id, e.role_attributes)
    where ${where}`;

/** The connection's scratch table of `captureAccess` (made by the transaction that first needs it). */
const createAccessCapture = `create temp table if not exists access_capture
  (identity_id text not null, service_id text not null, dial boolean not null, bind boolean not null)`;

/** Advisory lock key of the derivations of the policy database. */
const derivationLock = 7_355_610;

/** The derived tables of docs/adr/0009 in Postgres (set-based SQL; `roles_select` is in migration 0009). */
export class PgAccessLinks implements AccessLinks {
  /** The scope of the last `captureAccess` of this transaction, for `accessChanges`. */
  private captured: AccessScope | undefined;
  /** That capture was known to be empty: nothing was kept in `access_capture`. */
  private capturedNone = false;

  constructor(private readonly db: Db) {}

  async lock(): Promise<void> {
    // PGlite runs one transaction at a time on its one connection: a derivation there is alone already.
    if (isEmbedded(this.db)) return;
    await queryRows(this.db, 'select pg_advisory_xact_lock($1)', [derivationLock]);
  }

  async relinkPolicy(kind: PolicyKind, policyId: string): Promise<Touched> {
    const touched: Touched = { identities: [], services: [], edgeRouters: [] };
    for (const l of policyLinkTables[kind]) {
      const old = await queryRows<Record<string, string>>(
        this.db,
        `delete from ${l.table} where policy_id = $1 returning ${l.column}`,
        [policyId],
      );
      const now = await queryRows<Record<string, string>>(
        this.db,
        `insert into ${l.table} (${columns(l)}) ${selected(l, 'p.id = $1')} returning ${l.column}`,
        [policyId],
      );
      touched[touchedKey[l.entities]] = [...new Set([...old, ...now].map((r) => r[l.column]!))];
    }
    return touched;
  }

  /**
   * Every link table of the entity brought to what its policies select now, in one statement: per
   * table, the links it should hold (`w<i>`), the ones it holds that it should not deleted (`g<i>`),
   * the missing ones inserted (`i<i>`; a carried column brought up to date). Rows that stay are not
   * touched. Each data-modifying CTE runs to completion whether or not it is referenced, and no row is
   * both deleted and inserted, which one statement could not do.
   */
  private async relinkEntity(entities: LinkTable['entities'], id: string): Promise<void> {
    const parts = allLinkTables
      .filter((x) => x.entities === entities)
      .map(
        (l, i) => `w${i} as (${selected(l, 'e.id = $1')}),
         g${i} as (delete from ${l.table} t where t.${l.column} = $1
                    and not exists (select 1 from w${i} w where w.policy_id = t.policy_id)),
         i${i} as (insert into ${l.table} (${columns(l)}) select * from w${i}
                    on conflict (policy_id, ${l.column}) do ${l.carry ? `update set ${l.carry} = excluded.${l.carry} where ${l.table}.${l.carry} is distinct from excluded.${l.carry}` : 'nothing'})`,
      );
    await queryRows(this.db, `with ${parts.join(',\n')} select 1`, [id]);
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
    const l = allLinkTables.find((x) => x.entities === 'posture_checks')!;
    const old = await queryRows<{ policy_id: string }>(
      this.db,
      `delete from ${l.table} where ${l.column} = $1 returning policy_id`,
      [postureCheckId],
    );
    const now = await queryRows<{ policy_id: string }>(
      this.db,
      `insert into ${l.table} (${columns(l)}) ${selected(l, 'e.id = $1')} returning policy_id`,
      [postureCheckId],
    );
    return [...new Set([...old, ...now].map((r) => r.policy_id))].sort();
  }

  /** The links a service policy has now and would have from its current row (no writes). */
  async servicePolicyScope(policyId: string): Promise<{ identities: string[]; services: string[] }> {
    const scope = { identities: [] as string[], services: [] as string[] };
    for (const l of policyLinkTables.service.filter((x) => x.entities !== 'posture_checks')) {
      const rows = await queryRows<{ id: string }>(
        this.db,
        `select ${l.column} as id from ${l.table} where policy_id = $1
          union select s.${l.column} from (${selected(l, 'p.id = $1')}) s`,
        [policyId],
      );
      scope[l.entities === 'identities' ? 'identities' : 'services'] = rows.map((r) => r.id);
    }
    return scope;
  }

  private scopeSql(scope: AccessScope): { where: string; params: unknown[] } {
    const parts: string[] = [];
    const params: unknown[] = [];
    if (scope.identityIds) parts.push(`identity_id = any($${params.push(scope.identityIds)}::text[])`);
    if (scope.serviceIds) parts.push(`service_id = any($${params.push(scope.serviceIds)}::text[])`);
    if (parts.length === 0) throw new Error('an access scope names identities or services');
    return { where: parts.join(' and '), params };
  }

  /**
   * Keeps the scope's access in the connection's temp table `access_capture`. It is emptied by
   * deletes (here, of anything an earlier capture left, and by `accessChanges`), not by `truncate`
   * or `on commit delete rows`: both give the table new files on every use (a truncate at each
   * capture, an index rebuild at each commit), which cost ~3 ms of a 4 ms derivation under PGlite.
   * It has no index (the diff is a hash anti-join), so deleted rows leave no index entries behind,
   * and the heap's pages are pruned by the delete's own scan (temp tables see no autovacuum).
   */
  async captureAccess(scope: AccessScope, known: { none?: boolean } = {}): Promise<void> {
    this.capturedNone = known.none === true;
    if (this.capturedNone) {
      this.captured = scope;
      return;
    }
    await queryRows(this.db, createAccessCapture);
    const { where, params } = this.scopeSql(scope);
    await queryRows(
      this.db,
      `with cleared as (delete from access_capture)
       insert into access_capture select identity_id, service_id, dial, bind from identity_services where ${where}`,
      params,
    );
    this.captured = scope;
  }

  /**
   * The pairs of the captured scope whose access differs from the capture (a lost pair with dial
   * and bind false). They stay in Postgres: only their count, the identities and — up to
   * `accessEventPairLimit` — the pairs come back.
   */
  async accessChanges(): Promise<AccessChanges> {
    if (!this.captured) throw new Error('accessChanges without captureAccess');
    const { where, params } = this.scopeSql(this.captured);
    this.captured = undefined;
    const rows = await queryRows<{ identity_id: string; service_id: string; dial: boolean; bind: boolean }>(
      this.db,
      // Nothing captured: every pair there is now is a change. Otherwise the capture is read as it
      // was before this statement and emptied by it (`cleared`).
      this.capturedNone
        ? `select identity_id, service_id, dial, bind from identity_services where ${where} order by 1, 2`
        : `with now as (select identity_id, service_id, dial, bind from identity_services where ${where}),
            cleared as (delete from access_capture)
       select n.identity_id, n.service_id, n.dial, n.bind from now n
        where not exists (select 1 from access_capture b where b.identity_id = n.identity_id
                            and b.service_id = n.service_id and b.dial = n.dial and b.bind = n.bind)
       union all
       select b.identity_id, b.service_id, false, false from access_capture b
        where not exists (select 1 from now n where n.identity_id = b.identity_id and n.service_id = b.service_id)
       order by 1, 2`,
      params,
    );
    const identityIds = [...new Set(rows.map((r) => r.identity_id))];
    if (rows.length > accessEventPairLimit) return { pairs: rows.length, identityIds, changes: null };
    return {
      pairs: rows.length,
      identityIds,
      changes: rows.map((r) => ({ identityId: r.identity_id, serviceId: r.service_id, dial: r.dial, bind: r.bind })),
    };
  }

  async markServiceUpdates(scope: ServiceUpdateScope): Promise<void> {
    // Identities that see a service in `services` (a query of service ids), through the links.
    const seeing = (services: string) =>
      `select pi.identity_id from service_policy_identities pi
        where pi.policy_id in (select ps.policy_id from service_policy_services ps where ps.service_id in (${services}))`;
    const who = {
      identities: 'select unnest($1::text[])',
      service: seeing('select $1::text'),
      config: seeing(`select s.id from services s where not s.deleted and s.state -> 'configs' ? $1`),
      configType: seeing(
        `select s.id from services s where not s.deleted
            and exists (select 1 from configs c where not c.deleted and c.config_type_id = $1 and s.state -> 'configs' ? c.id)`,
      ),
      servicePolicies: 'select identity_id from service_policy_identities where policy_id = any($1::text[])',
      all: `select pi.identity_id from service_policy_identities pi
             where $1::text is null and exists (select 1 from service_policy_services ps where ps.policy_id = pi.policy_id)`,
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

  async rebuildAll(): Promise<string[]> {
    const [one, other] = policyLinkTables.service.filter((x) => x.entities !== 'posture_checks');
    const snapshot = (l: LinkTable) =>
      `select policy_id, ${l.column}${l.carry ? ` || ' ' || ${l.carry}` : ''} as id from ${l.table}`;
    await queryRows(
      this.db,
      `create temp table if not exists links_before (kind text not null, policy_id text not null, id text not null)
         on commit delete rows`,
    );
    await queryRows(this.db, 'truncate links_before');
    await queryRows(
      this.db,
      `insert into links_before select 'i', * from (${snapshot(one!)}) a union all select 's', * from (${snapshot(other!)}) b`,
    );
    for (const l of allLinkTables) {
      await queryRows(this.db, `delete from ${l.table}`);
      await queryRows(this.db, `insert into ${l.table} (${columns(l)}) ${selected(l)}`);
    }
    // Whose services may differ: identities whose own links changed, and every identity (before or
    // after) of a policy whose services changed.
    const rows = await queryRows<{ id: string }>(
      this.db,
      `with now as (select 'i' as kind, * from (${snapshot(one!)}) a union all select 's', * from (${snapshot(other!)}) b),
            moved as ((select * from now except select * from links_before) union (select * from links_before except select * from now))
       select id from moved where kind = 'i'
       union select x.id from links_before x join moved m on m.kind = 's' and m.policy_id = x.policy_id where x.kind = 'i'
       union select x.identity_id from ${one!.table} x join moved m on m.kind = 's' and m.policy_id = x.policy_id
       order by 1`,
    );
    return rows.map((r) => r.id);
  }

  async differences(): Promise<LinkDifference[]> {
    const derived = allLinkTables.map((l) => ({ table: l.table, columns: columns(l), expected: selected(l) }));
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
