import {
  type Db,
  type LockOption,
  date,
  json,
  listRows,
  lockClause,
  queryRows,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import { type AuthPolicy, normalizePrimary, normalizeSecondary } from './auth-policy.domain.ts';
import type { ListInput, ListPage } from '../shared/model.domain.ts';
import type { AuthPolicyStore } from './auth-policies.ports.ts';
import { authPolicyQuery } from '../shared/query-entities.store.ts';

type Row = Record<string, unknown>;

/** Maps a raw (snake_case) auth_policies row: every read of a policy is SQL (`authPolicyColumns`, lists, the login row). */
export function policyFromRow(r: Row): AuthPolicy {
  return {
    id: String(r.id),
    name: String(r.name),
    isSystem: Boolean(r.is_system),
    primary: normalizePrimary(json(r.primary, {})),
    secondary: normalizeSecondary(json(r.secondary, {})),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

/** The columns of an auth policy, named (a prepared statement keeps its result shape). */
export const authPolicyColumns = `id, name, is_system, "primary", secondary, tags, created_at, updated_at`;
/** Read with every identity creation (prepared). */
const authPolicyById = `select ${authPolicyColumns} from auth_policies where id = $1`;

/** A policy's columns in `authPolicyColumns` order, as statement parameters. */
function authPolicyValues(p: AuthPolicy): unknown[] {
  return [
    p.id,
    p.name,
    p.isSystem,
    JSON.stringify(p.primary),
    JSON.stringify(p.secondary),
    JSON.stringify(p.tags),
    p.createdAt,
    p.updatedAt,
  ];
}

const insertAuthPolicy = `insert into auth_policies (${authPolicyColumns})
  values ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb, $7, $8)`;
/** Every column but `is_system` (`$3`) and `created_at` (`$7`) from `authPolicyValues`. */
const updateAuthPolicy = `update auth_policies set name = $2, "primary" = $4::jsonb, secondary = $5::jsonb,
  tags = $6::jsonb, updated_at = $8
  where id = $1`;

export class PgAuthPolicyStore implements AuthPolicyStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<AuthPolicy | null> {
    const [row] = await queryRows<Row>(this.db, `${authPolicyById}${lockClause(options)}`, [id], { prepare: true });
    return row ? policyFromRow(row) : null;
  }

  private unique(p: AuthPolicy) {
    return { auth_policies_name_key: { field: 'name', store: 'authPolicies', value: p.name } };
  }

  async insertIfAbsent(p: AuthPolicy): Promise<void> {
    await queryRows(this.db, `${insertAuthPolicy} on conflict do nothing`, authPolicyValues(p));
  }

  async insert(p: AuthPolicy): Promise<void> {
    await withUniqueFields(() => queryRows(this.db, insertAuthPolicy, authPolicyValues(p)), this.unique(p));
  }

  async update(p: AuthPolicy): Promise<void> {
    await withUniqueFields(() => queryRows(this.db, updateAuthPolicy, authPolicyValues(p)), this.unique(p));
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from auth_policies where id = $1 returning id', [id])).length > 0;
  }

  async list(input: ListInput): Promise<ListPage<AuthPolicy>> {
    return toListPage(await listRows<Row>(this.db, authPolicyQuery, input), policyFromRow);
  }

  async idsReferencingSigner(signerId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.db,
      `select id from auth_policies
        where coalesce("primary"->'extJwt'->'allowedSigners', '[]'::jsonb) ? $1 or secondary->>'requireExtJwtSigner' = $1
        order by id`,
      [signerId],
    );
    return rows.map((r) => r.id);
  }
}
