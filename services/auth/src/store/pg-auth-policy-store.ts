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
import { eq } from 'drizzle-orm';
import { type AuthPolicy, normalizePrimary, normalizeSecondary } from '../domain/auth-policy.ts';
import type { ListInput, ListPage } from '../domain/model.ts';
import type { AuthPolicyStore } from '../domain/ports.ts';
import { authPolicyQuery } from './query-entities.ts';
import { authPolicies } from './schema.ts';

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

export class PgAuthPolicyStore implements AuthPolicyStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<AuthPolicy | null> {
    const [row] = await queryRows<Row>(this.db, `${authPolicyById}${lockClause(options)}`, [id], { prepare: true });
    return row ? policyFromRow(row) : null;
  }

  private values(p: AuthPolicy) {
    return {
      id: p.id,
      name: p.name,
      isSystem: p.isSystem,
      primary: p.primary,
      secondary: p.secondary,
      tags: p.tags,
      createdAt: p.createdAt,
      updatedAt: p.updatedAt,
    };
  }

  private unique(p: AuthPolicy) {
    return { auth_policies_name_key: { field: 'name', store: 'authPolicies', value: p.name } };
  }

  async insertIfAbsent(p: AuthPolicy): Promise<void> {
    await this.db.insert(authPolicies).values(this.values(p)).onConflictDoNothing();
  }

  async insert(p: AuthPolicy): Promise<void> {
    await withUniqueFields(() => this.db.insert(authPolicies).values(this.values(p)), this.unique(p));
  }

  async update(p: AuthPolicy): Promise<void> {
    const { id, createdAt: _c, isSystem: _s, ...rest } = this.values(p);
    await withUniqueFields(() => this.db.update(authPolicies).set(rest).where(eq(authPolicies.id, id)), this.unique(p));
  }

  async delete(id: string): Promise<boolean> {
    return (
      (await this.db.delete(authPolicies).where(eq(authPolicies.id, id)).returning({ id: authPolicies.id })).length > 0
    );
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
