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
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { type FieldDef, type QueryEntity, baseEntityFields, scalar, set } from '@ziti/zitiql';
import type { LinkTable } from '../access/link-tables.store.ts';
import type { Policy, Semantic, ServicePolicyType } from './policies.domain.ts';
import type { PolicyStore } from './policies.ports.ts';
import { type RoleField, roleTargetOf } from './roles.domain.ts';
import { roleTargetTables } from './roles.store.ts';

type Row = Record<string, unknown>;

/**
 * A to-many relation of a policy through one of its link tables (docs/adr/0009): `anyOf(<name>) = "id"`
 * over the linked ids and `anyOf(<name>.name) = "x"` over the linked live entities' names.
 */
export function linked(name: string, link: LinkTable): Record<string, FieldDef> {
  const { table, column, entities } = link;
  return {
    [name]: set((a) => `select x.${column} from ${table} x where x.policy_id = ${a}.id`, 'string'),
    [`${name}.name`]: set(
      (a) =>
        `select e.name from ${table} x join ${entities} e on e.id = x.${column} and not e.deleted where x.policy_id = ${a}.id`,
      'string',
    ),
  };
}

/** The filterable fields every policy kind has (ZITI-FACTS §3.5). */
export const commonPolicyFields = (alias: string) => ({
  ...baseEntityFields(alias),
  name: scalar(`${alias}.name`, 'string'),
  semantic: scalar(`${alias}.semantic`, 'string'),
});

/**
 * One policy table: its name, role columns, optional columns, unique name index and filter entity
 * (each kind's `<kind>.store.ts` declares its own).
 */
export interface PolicyTable {
  table: 'service_policies' | 'edge_router_policies' | 'service_edge_router_policies';
  /** The reference's store name in duplicate-name errors. */
  store: string;
  roles: Partial<Record<RoleField, string>>;
  hasType: boolean;
  hasIsSystem: boolean;
  query: QueryEntity;
}

/** A policy of the table `def` from its row (any reader of the policy tables decodes them so). */
export function policyFromRow(def: PolicyTable): (r: Row) => Policy {
  const roleEntries = Object.entries(def.roles) as [RoleField, string][];
  return (r) => ({
    id: String(r.id),
    name: String(r.name),
    semantic: r.semantic as Semantic,
    type: def.hasType ? (r.type as ServicePolicyType) : null,
    isSystem: def.hasIsSystem ? Boolean(r.is_system) : false,
    roles: Object.fromEntries(roleEntries.map(([field, column]) => [field, (r[column] as string[] | null) ?? []])),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  });
}

/**
 * A page of the policies of the table `def` (ZitiQL over its query entity); `scope` (SQL over the
 * query's alias) narrows the rows before the filter, e.g. to a link table's (the relation lists).
 */
export async function listPolicies(
  db: Db,
  def: PolicyTable,
  input: ListInput,
  scope?: { sql: string; params: unknown[] },
): Promise<ListPage<Policy>> {
  return toListPage(await listRows<Row>(db, def.query, input, scope ? { scope } : {}), policyFromRow(def));
}

/** Policies of one kind in their table; role arrays are written as the domain sorted them. */
export class PgPolicyStore implements PolicyStore {
  private readonly roleEntries: [RoleField, string][];

  constructor(
    private readonly db: Db,
    private readonly def: PolicyTable,
  ) {
    this.roleEntries = Object.entries(def.roles) as [RoleField, string][];
    this.fromRow = policyFromRow(def);
  }

  private readonly fromRow: (r: Row) => Policy;

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

  async dropGoneRoles(field: RoleField, ids?: string[]): Promise<Policy[]> {
    const column = this.def.roles[field];
    if (!column) return [];
    const { table, live } = roleTargetTables[roleTargetOf[field]];
    // `$1`: the ids (null: any), `$2`: their roles, to pass over the policies that name none of them.
    const gone = `r like '@%' and ($1::text[] is null or substr(r, 2) = any($1::text[]))
      and not exists (select 1 from ${table} e where e.id = substr(r, 2) and ${live})`;
    const rows = await queryRows<Row>(
      this.db,
      `with changed as (
         update ${this.def.table} p
            set ${column} = array(select r from unnest(p.${column}) with ordinality as u(r, n) where not (${gone}) order by n)
          where ${this.def.hasIsSystem ? 'not p.is_system and ' : ''}($2::text[] is null or p.${column} && $2::text[])
            and exists (select 1 from unnest(p.${column}) as u(r) where ${gone})
          returning p.*)
       select * from changed order by id`,
      [ids ?? null, ids ? ids.map((id) => `@${id}`) : null],
    );
    return rows.map(this.fromRow);
  }

  list(input: ListInput): Promise<ListPage<Policy>> {
    return listPolicies(this.db, this.def, input);
  }
}
