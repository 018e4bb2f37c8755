import {
  type Db,
  type LockOption,
  date,
  dateOrNull,
  entityStatesPage,
  json,
  listRows,
  lockClause,
  queryRows,
  roleFilterScope,
  statesPageRows,
  withForeignKeys,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import { unknownAuthPolicy } from '../auth-policies/auth-policy.domain.ts';
import type {
  AuthenticatorSummary,
  Identity,
  IdentityView,
  ListInput,
  ListPage,
  RoleFilter,
} from '../shared/model.domain.ts';
import type { IdentityStore } from './identities.ports.ts';
import { identityQuery } from '../shared/query-entities.store.ts';

type Row = Record<string, unknown>;

/** Maps a raw (snake_case) identities row, as list queries return it. */
export function identityFromRow(r: Row): Identity {
  return {
    id: String(r.id),
    name: String(r.name),
    typeId: String(r.type_id),
    isAdmin: Boolean(r.is_admin),
    isDefaultAdmin: Boolean(r.is_default_admin),
    roleAttributes: (r.role_attributes as string[] | null) ?? [],
    externalId: (r.external_id as string | null) ?? null,
    authPolicyId: String(r.auth_policy_id),
    disabled: Boolean(r.disabled),
    disabledAt: dateOrNull(r.disabled_at),
    disabledUntil: dateOrNull(r.disabled_until),
    defaultHostingPrecedence: (r.default_hosting_precedence as string | null) ?? null,
    defaultHostingCost: Number(r.default_hosting_cost ?? 0),
    serviceHostingCosts: json(r.service_hosting_costs, {}),
    serviceHostingPrecedences: json(r.service_hosting_precedences, {}),
    appData: json(r.app_data, {}),
    envInfo: json(r.env_info, {}),
    sdkInfo: json(r.sdk_info, {}),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

/** The columns of an identity, named (not `*`: a prepared statement keeps its result shape). */
export const identityColumns = `i.id, i.name, i.type_id, i.is_admin, i.is_default_admin, i.role_attributes, i.external_id,
  i.auth_policy_id, i.disabled, i.disabled_at, i.disabled_until, i.default_hosting_precedence,
  i.default_hosting_cost, i.service_hosting_costs, i.service_hosting_precedences, i.app_data, i.env_info,
  i.sdk_info, i.tags, i.created_at, i.updated_at`;

/**
 * What an identity's detail shows beside its row, per row of `i` (joined with its auth policy `p`):
 * its authenticators as one JSON array of `[id, method, username, fingerprint]`, whether it has a
 * verified MFA, and whether the enrollment read model has an outstanding enrollment of it.
 */
const viewExtras = `p.name as auth_policy_name,
  (select json_agg(json_build_array(a.id, a.method, a.username, a.cert_fingerprint) order by a.created_at, a.id)
     from authenticators a where a.identity_id = i.id) as authenticator_list,
  exists (select from mfa m where m.identity_id = i.id and m.is_verified) as mfa_enabled,
  exists (select from outstanding_enrollments e where e.identity_id = i.id and not e.deleted) as enrolling`;

const identityById = `select ${identityColumns} from identities i where i.id = $1`;
const identitiesByIds = `select ${identityColumns} from identities i where i.id = any($1::text[])`;
const viewById = `select ${identityColumns}, ${viewExtras}
  from identities i left join auth_policies p on p.id = i.auth_policy_id where i.id = $1`;
const viewsByIds = `select ${identityColumns}, ${viewExtras}
  from identities i left join auth_policies p on p.id = i.auth_policy_id where i.id = any($1::text[])`;

/** An identity's columns in `identityColumns` order, as statement parameters. */
function identityValues(i: Identity): unknown[] {
  return [
    i.id,
    i.name,
    i.typeId,
    i.isAdmin,
    i.isDefaultAdmin,
    i.roleAttributes,
    i.externalId,
    i.authPolicyId,
    i.disabled,
    i.disabledAt,
    i.disabledUntil,
    i.defaultHostingPrecedence,
    i.defaultHostingCost,
    JSON.stringify(i.serviceHostingCosts),
    JSON.stringify(i.serviceHostingPrecedences),
    JSON.stringify(i.appData),
    JSON.stringify(i.envInfo),
    JSON.stringify(i.sdkInfo),
    JSON.stringify(i.tags),
    i.createdAt,
    i.updatedAt,
  ];
}

const insertIdentity = `insert into identities (${identityColumns.replace(/i\./g, '')})
  values ($1, $2, $3, $4, $5, $6::text[], $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15::jsonb, $16::jsonb,
          $17::jsonb, $18::jsonb, $19::jsonb, $20, $21)`;
/** Every column but `created_at` (`$20`, unused) from `identityValues`. */
const updateIdentity = `update identities set name = $2, type_id = $3, is_admin = $4, is_default_admin = $5,
  role_attributes = $6::text[], external_id = $7, auth_policy_id = $8, disabled = $9, disabled_at = $10,
  disabled_until = $11, default_hosting_precedence = $12, default_hosting_cost = $13,
  service_hosting_costs = $14::jsonb, service_hosting_precedences = $15::jsonb, app_data = $16::jsonb,
  env_info = $17::jsonb, sdk_info = $18::jsonb, tags = $19::jsonb, updated_at = $21
  where id = $1`;

function viewFromRow(r: Row): IdentityView {
  const list = json<[string, string, string | null, string | null][] | null>(r.authenticator_list, null) ?? [];
  return {
    identity: identityFromRow(r),
    authPolicyName: (r.auth_policy_name as string | null) ?? null,
    authenticators: list.map(([id, method, username, certFingerprint]): AuthenticatorSummary => ({
      id,
      method: method as AuthenticatorSummary['method'],
      username,
      certFingerprint,
    })),
    isMfaEnabled: Boolean(r.mfa_enabled),
    hasOutstandingEnrollment: Boolean(r.enrolling),
  };
}

export class PgIdentityStore implements IdentityStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<Identity | null> {
    const [row] = await queryRows<Row>(this.db, `${identityById}${lockClause(options)}`, [id], { prepare: true });
    return row ? identityFromRow(row) : null;
  }

  async getMany(ids: string[]): Promise<Identity[]> {
    if (ids.length === 0) return [];
    const rows = await queryRows<Row>(this.db, identitiesByIds, [[...new Set(ids)]], { prepare: true });
    return rows.map(identityFromRow);
  }

  async getView(id: string): Promise<IdentityView | null> {
    const [row] = await queryRows<Row>(this.db, viewById, [id], { prepare: true });
    return row ? viewFromRow(row) : null;
  }

  async getViews(ids: string[]): Promise<IdentityView[]> {
    if (ids.length === 0) return [];
    const rows = await queryRows<Row>(this.db, viewsByIds, [[...new Set(ids)]], { prepare: true });
    return rows.map(viewFromRow);
  }

  async page(after: string | undefined, limit: number, ids?: string[]): Promise<Identity[]> {
    const page = entityStatesPage({ type: 'identity', after, limit, ids }, 'i.id');
    return (
      await statesPageRows<Row>(this.db, { columns: identityColumns, from: 'identities i', key: 'i.id' }, page)
    ).map(identityFromRow);
  }

  /** A page of identities (role filter, ZitiQL) with what their details show, and the total (`listRows`' `detail`). */
  async listViews(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<IdentityView>> {
    const listed = await listRows<Row>(this.db, identityQuery, input, {
      ...(roleFilter && roleFilter.roles.length > 0
        ? { scope: roleFilterScope(roleFilter, 'i.role_attributes', 'i.id') }
        : {}),
      columns: identityColumns,
      detail: { columns: viewExtras, join: 'left join auth_policies p on p.id = i.auth_policy_id' },
    });
    return toListPage(listed, viewFromRow);
  }

  async findByName(name: string): Promise<Identity | null> {
    const [row] = await queryRows<Row>(this.db, `select ${identityColumns} from identities i where i.name = $1`, [
      name,
    ]);
    return row ? identityFromRow(row) : null;
  }

  async findByExternalId(externalId: string): Promise<Identity | null> {
    const [row] = await queryRows<Row>(
      this.db,
      `select ${identityColumns} from identities i where i.external_id = $1`,
      [externalId],
    );
    return row ? identityFromRow(row) : null;
  }

  async idsByAuthPolicy(authPolicyId: string, limit = 10_000): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.db,
      'select id from identities where auth_policy_id = $1 order by id limit $2',
      [authPolicyId, limit],
    );
    return rows.map((r) => r.id);
  }

  async findDefaultAdmin(): Promise<Identity | null> {
    const [row] = await queryRows<Row>(this.db, `select ${identityColumns} from identities i where i.is_default_admin`);
    return row ? identityFromRow(row) : null;
  }

  private unique(i: Identity) {
    return {
      identities_name_key: { field: 'name', store: 'identities', value: i.name },
      identities_external_id_key: { field: 'externalId', store: 'identities', value: i.externalId },
    };
  }

  async insert(i: Identity): Promise<void> {
    await withUniqueFields(
      () =>
        withForeignKeys(() => queryRows(this.db, insertIdentity, identityValues(i), { prepare: true }), {
          identities_auth_policy_id_fkey: () => unknownAuthPolicy(i.authPolicyId),
        }),
      this.unique(i),
    );
  }

  async update(i: Identity): Promise<void> {
    await withUniqueFields(
      () => queryRows(this.db, updateIdentity, identityValues(i), { prepare: true }),
      this.unique(i),
    );
  }

  async delete(id: string): Promise<boolean> {
    const rows = await queryRows(this.db, 'delete from identities where id = $1 returning id', [id]);
    return rows.length > 0;
  }

  async endLapsedDisables(now: Date, limit: number): Promise<Identity[]> {
    const rows = await queryRows<Row>(
      this.db,
      `update identities set disabled = false
        where id in (select id from identities
                      where disabled and disabled_until is not null and disabled_until <= $1
                      order by disabled_until limit $2 for update skip locked)
        returning *`,
      [now.toISOString(), limit],
    );
    return rows.map(identityFromRow);
  }

  async list(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<Identity>> {
    const scope =
      roleFilter && roleFilter.roles.length > 0 ? roleFilterScope(roleFilter, 'i.role_attributes', 'i.id') : undefined;
    return toListPage(await listRows<Row>(this.db, identityQuery, input, scope ? { scope } : {}), identityFromRow);
  }
}
