import {
  type Db,
  type LockOption,
  date,
  json,
  listRows,
  lockClause,
  queryRows,
  toListPage,
  withUniqueFields,
} from '@ziti/platform';
import type { QueryEntity } from '@ziti/zitiql';
import type { Policy, PolicyStore, Semantic, ServicePolicyType } from '../domain/policies.ts';
import type { ListInput, ListPage } from '../domain/ports.ts';
import type { RoleField, RoleTarget, RoleTargets } from '../domain/roles.ts';
import { edgeRouterPolicyQuery, serviceEdgeRouterPolicyQuery, servicePolicyQuery } from './policy-query-entities.ts';

type Row = Record<string, unknown>;

/** One policy table: its name, role columns, optional columns, unique name index and filter entity. */
interface PolicyTable {
  table: 'service_policies' | 'edge_router_policies' | 'service_edge_router_policies';
  /** The reference's store name in duplicate-name errors. */
  store: string;
  roles: Partial<Record<RoleField, string>>;
  hasType: boolean;
  hasIsSystem: boolean;
  query: QueryEntity;
}

const tables = {
  service: {
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
  },
  edgeRouter: {
    table: 'edge_router_policies',
    store: 'edgeRouterPolicies',
    roles: { identityRoles: 'identity_roles', edgeRouterRoles: 'edge_router_roles' },
    hasType: false,
    hasIsSystem: true,
    query: edgeRouterPolicyQuery,
  },
  serviceEdgeRouter: {
    table: 'service_edge_router_policies',
    store: 'serviceEdgeRouterPolicies',
    roles: { serviceRoles: 'service_roles', edgeRouterRoles: 'edge_router_roles' },
    hasType: false,
    hasIsSystem: false,
    query: serviceEdgeRouterPolicyQuery,
  },
} satisfies Record<string, PolicyTable>;

/** Policies of one kind in their table; role arrays are written as the domain sorted them. */
export class PgPolicyStore implements PolicyStore {
  private readonly roleEntries: [RoleField, string][];

  constructor(
    private readonly db: Db,
    private readonly def: PolicyTable,
  ) {
    this.roleEntries = Object.entries(def.roles) as [RoleField, string][];
  }

  private fromRow = (r: Row): Policy => ({
    id: String(r.id),
    name: String(r.name),
    semantic: r.semantic as Semantic,
    type: this.def.hasType ? (r.type as ServicePolicyType) : null,
    isSystem: this.def.hasIsSystem ? Boolean(r.is_system) : false,
    roles: Object.fromEntries(this.roleEntries.map(([field, column]) => [field, (r[column] as string[] | null) ?? []])),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  });

  /** Column → value of every column a write sets (besides `id` and `created_at`). */
  private values(p: Policy): [string, unknown, string?][] {
    return [
      ['name', p.name],
      ['semantic', p.semantic],
      ...(this.def.hasType ? [['type', p.type] as [string, unknown]] : []),
      ...this.roleEntries.map(([field, column]): [string, unknown, string] => [column, p.roles[field] ?? [], 'text[]']),
      ['tags', JSON.stringify(p.tags), 'jsonb'],
      ['updated_at', p.updatedAt],
    ];
  }

  private unique(p: Policy) {
    return { [`${this.def.table}_name`]: { field: 'name', store: this.def.store, value: p.name } };
  }

  async get(id: string, options: LockOption = {}): Promise<Policy | null> {
    const rows = await queryRows<Row>(this.db, `select * from ${this.def.table} where id = $1${lockClause(options)}`, [
      id,
    ]);
    return rows[0] ? this.fromRow(rows[0]) : null;
  }

  async insert(p: Policy): Promise<void> {
    const values = this.values(p);
    const columns = ['id', 'created_at', ...(this.def.hasIsSystem ? ['is_system'] : []), ...values.map((v) => v[0])];
    const params = [p.id, p.createdAt, ...(this.def.hasIsSystem ? [p.isSystem] : []), ...values.map((v) => v[1])];
    const casts = [undefined, undefined, ...(this.def.hasIsSystem ? [undefined] : []), ...values.map((v) => v[2])];
    const placeholders = casts.map((c, i) => `$${i + 1}${c ? `::${c}` : ''}`);
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          `insert into ${this.def.table} (${columns.join(', ')}) values (${placeholders.join(', ')})`,
          params,
        ),
      this.unique(p),
    );
  }

  async update(p: Policy): Promise<void> {
    const values = this.values(p);
    const sets = values.map(([column, , cast], i) => `${column} = $${i + 2}${cast ? `::${cast}` : ''}`);
    await withUniqueFields(
      () =>
        queryRows(this.db, `update ${this.def.table} set ${sets.join(', ')} where id = $1`, [
          p.id,
          ...values.map((v) => v[1]),
        ]),
      this.unique(p),
    );
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, `delete from ${this.def.table} where id = $1 returning id`, [id])).length > 0;
  }

  /** `scope` (SQL over the alias `p`) narrows the rows before the filter, e.g. to a link table's. */
  async list(input: ListInput, scope?: { sql: string; params: unknown[] }): Promise<ListPage<Policy>> {
    return toListPage(await listRows<Row>(this.db, this.def.query, input, scope ? { scope } : {}), this.fromRow);
  }
}

export const pgServicePolicies = (db: Db) => new PgPolicyStore(db, tables.service);
export const pgEdgeRouterPolicies = (db: Db) => new PgPolicyStore(db, tables.edgeRouter);
export const pgServiceEdgeRouterPolicies = (db: Db) => new PgPolicyStore(db, tables.serviceEdgeRouter);

/** The tables `@id` roles point into: read models (live rows only) and policy's own posture checks. */
const targetTables: Record<RoleTarget, { table: string; live: string }> = {
  identities: { table: 'identities', live: 'not deleted' },
  services: { table: 'services', live: 'not deleted' },
  edgeRouters: { table: 'edge_routers', live: 'not deleted' },
  postureChecks: { table: 'posture_checks', live: 'true' },
};

/** `@id` roles resolved against policy's read models (live rows only, tombstones excluded) and posture checks. */
export class PgRoleTargets implements RoleTargets {
  constructor(private readonly db: Db) {}

  async names(target: RoleTarget, ids: string[]): Promise<Map<string, string>> {
    const { table, live } = targetTables[target];
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
