import {
  type Db,
  type LockOption,
  type RoleFilter,
  date,
  json,
  listRows,
  lockClause,
  queryRows,
  roleFilterScope,
  toListPage,
  withUniqueFields,
} from '@ziti/platform';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { type QueryEntity, arraySet, baseEntityFields, defineQueryEntity, scalar, set } from '@ziti/zitiql';
import { roleAttributesOf } from '../shared/role-attributes.store.ts';
import type {
  OperatingSystem,
  PostureCheck,
  PostureCheckSpec,
  PostureCheckType,
  PostureCheckTypeId,
} from './posture-checks.domain.ts';
import { specFields } from './posture-checks.domain.ts';
import type { PostureCheckStore, PostureCheckTypeStore } from './posture-checks.ports.ts';

/**
 * Posture checks, policy's own rows (ziti `controller/db/posture_check_store.go`): the base fields,
 * `name`, `roleAttributes`, the MFA flags `promptOnWake` / `promptOnUnlock`, the service policies
 * that select the check and the services those Bind / Dial policies grant.
 */
const servicesOfChecks = (type: 'Bind' | 'Dial') => (a: string) =>
  `select ps.service_id from service_policy_posture_checks x
     join service_policies p on p.id = x.policy_id and p.type = '${type}'
     join service_policy_services ps on ps.policy_id = x.policy_id
    where x.posture_check_id = ${a}.id`;

export const postureCheckQuery: QueryEntity = defineQueryEntity({
  table: 'posture_checks',
  alias: 'c',
  fields: {
    ...baseEntityFields('c'),
    name: scalar('c.name', 'string'),
    roleAttributes: arraySet('c.role_attributes', 'string'),
    promptOnWake: scalar("coalesce((c.data->>'promptOnWake')::boolean, false)", 'boolean'),
    promptOnUnlock: scalar("coalesce((c.data->>'promptOnUnlock')::boolean, false)", 'boolean'),
    servicePolicies: set(
      (a) => `select x.policy_id from service_policy_posture_checks x where x.posture_check_id = ${a}.id`,
      'string',
    ),
    bindServices: set(servicesOfChecks('Bind'), 'string'),
    dialServices: set(servicesOfChecks('Dial'), 'string'),
  },
});

/** The fixed posture check types (base fields and `name`). */
export const postureCheckTypeQuery: QueryEntity = defineQueryEntity({
  table: 'posture_check_types',
  alias: 't',
  fields: { ...baseEntityFields('t'), name: scalar('t.name', 'string') },
});

type Row = Record<string, unknown>;

export const postureCheckFromRow = (r: Row): PostureCheck => ({
  id: String(r.id),
  name: String(r.name),
  version: Number(r.version),
  roleAttributes: (r.role_attributes as string[] | null) ?? [],
  tags: json(r.tags, {}),
  spec: { typeId: r.type_id as PostureCheckTypeId, ...json<Record<string, unknown>>(r.data, {}) } as PostureCheckSpec,
  createdAt: date(r.created_at),
  updatedAt: date(r.updated_at),
});

const unique = (c: PostureCheck) => ({
  posture_checks_name: { field: 'name', store: 'postureChecks', value: c.name },
});

/** Posture checks in `posture_checks` (the type fields as jsonb `data`). */
export class PgPostureCheckStore implements PostureCheckStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<PostureCheck | null> {
    const [row] = await queryRows<Row>(this.db, `select * from posture_checks where id = $1${lockClause(options)}`, [
      id,
    ]);
    return row ? postureCheckFromRow(row) : null;
  }

  async insert(c: PostureCheck): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          `insert into posture_checks (id, name, type_id, version, role_attributes, data, tags, created_at, updated_at)
           values ($1, $2, $3, $4, $5::text[], $6::jsonb, $7::jsonb, $8, $9)`,
          [
            c.id,
            c.name,
            c.spec.typeId,
            c.version,
            c.roleAttributes,
            JSON.stringify(specFields(c.spec)),
            JSON.stringify(c.tags),
            c.createdAt,
            c.updatedAt,
          ],
        ),
      unique(c),
    );
  }

  async update(c: PostureCheck): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          `update posture_checks set name = $2, version = $3, role_attributes = $4::text[], data = $5::jsonb,
                  tags = $6::jsonb, updated_at = $7
            where id = $1`,
          [
            c.id,
            c.name,
            c.version,
            c.roleAttributes,
            JSON.stringify(specFields(c.spec)),
            JSON.stringify(c.tags),
            c.updatedAt,
          ],
        ),
      unique(c),
    );
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from posture_checks where id = $1 returning id', [id])).length > 0;
  }

  async list(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<PostureCheck>> {
    const scope = roleFilter ? roleFilterScope(roleFilter, 'c.role_attributes', 'c.id') : undefined;
    return toListPage(
      await listRows<Row>(this.db, postureCheckQuery, input, scope ? { scope } : {}),
      postureCheckFromRow,
    );
  }

  roleAttributes(input: ListInput): Promise<ListPage<string>> {
    return roleAttributesOf(this.db, 'posture_checks', input);
  }
}

const typeFromRow = (r: Row): PostureCheckType => ({
  id: String(r.id),
  name: String(r.name),
  operatingSystems: json<OperatingSystem[]>(r.operating_systems, []),
  tags: json(r.tags, {}),
  createdAt: date(r.created_at),
  updatedAt: date(r.updated_at),
});

/** The fixed posture check types of the migration. */
export class PgPostureCheckTypeStore implements PostureCheckTypeStore {
  constructor(private readonly db: Db) {}

  async get(id: string): Promise<PostureCheckType | null> {
    const [row] = await queryRows<Row>(this.db, 'select * from posture_check_types where id = $1', [id]);
    return row ? typeFromRow(row) : null;
  }

  async list(input: ListInput): Promise<ListPage<PostureCheckType>> {
    return toListPage(await listRows<Row>(this.db, postureCheckTypeQuery, input), typeFromRow);
  }
}
