import { ApiError } from '@ziti/contracts';
import { type Db, listRows, queryRows, roleFilterScope, withUniqueFields, toListPage } from '@ziti/platform';
import { and, eq, inArray } from 'drizzle-orm';
import type { Authenticator, Identity, ListInput, ListPage, NamedEntity, RoleFilter } from '../domain/model.ts';
import type { AuthenticatorStore, IdentityStore, IdentityTypeStore } from '../domain/ports.ts';
import { authenticatorQuery, identityQuery, identityTypeQuery } from './query-entities.ts';
import { authenticators, identities, identityTypes } from './schema.ts';

type Row = Record<string, unknown>;
const date = (v: unknown) => (v instanceof Date ? v : new Date(String(v)));
const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : date(v));
const json = <T>(v: unknown, fallback: T): T =>
  v === null || v === undefined ? fallback : typeof v === 'string' ? (JSON.parse(v) as T) : (v as T);

/** Maps a raw (snake_case) identities row, as list queries return it. */
function identityFromRow(r: Row): Identity {
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

function authenticatorFromRow(r: Row): Authenticator {
  return {
    id: String(r.id),
    identityId: String(r.identity_id),
    method: r.method as Authenticator['method'],
    username: (r.username as string | null) ?? null,
    passwordHash: (r.password_hash as string | null) ?? null,
    salt: (r.salt as string | null) ?? null,
    certFingerprint: (r.cert_fingerprint as string | null) ?? null,
    certPem: (r.cert_pem as string | null) ?? null,
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export class PgIdentityStore implements IdentityStore {
  constructor(private readonly db: Db) {}

  async get(id: string): Promise<Identity | null> {
    const rows = await this.db.select().from(identities).where(eq(identities.id, id));
    return rows[0] ? { ...rows[0], roleAttributes: rows[0].roleAttributes ?? [] } : null;
  }

  async findByName(name: string): Promise<Identity | null> {
    const rows = await this.db.select().from(identities).where(eq(identities.name, name));
    return rows[0] ?? null;
  }

  async findByExternalId(externalId: string): Promise<Identity | null> {
    const rows = await this.db.select().from(identities).where(eq(identities.externalId, externalId));
    return rows[0] ?? null;
  }

  async idsByAuthPolicy(authPolicyId: string, limit = 10_000): Promise<string[]> {
    const rows = await this.db
      .select({ id: identities.id })
      .from(identities)
      .where(eq(identities.authPolicyId, authPolicyId))
      .orderBy(identities.id)
      .limit(limit);
    return rows.map((r) => r.id);
  }

  async findDefaultAdmin(): Promise<Identity | null> {
    const rows = await this.db.select().from(identities).where(eq(identities.isDefaultAdmin, true));
    return rows[0] ?? null;
  }

  private unique(i: Identity) {
    return {
      identities_name_key: { field: 'name', store: 'identities', value: i.name },
      identities_external_id_key: { field: 'externalId', store: 'identities', value: i.externalId },
    };
  }

  async insert(i: Identity): Promise<void> {
    await withUniqueFields(() => this.db.insert(identities).values(i), this.unique(i));
  }

  async update(i: Identity): Promise<void> {
    const { id, createdAt: _c, ...rest } = i;
    await withUniqueFields(() => this.db.update(identities).set(rest).where(eq(identities.id, id)), this.unique(i));
  }

  async delete(id: string): Promise<boolean> {
    const rows = await this.db.delete(identities).where(eq(identities.id, id)).returning({ id: identities.id });
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

export class PgAuthenticatorStore implements AuthenticatorStore {
  constructor(private readonly db: Db) {}

  async get(id: string): Promise<Authenticator | null> {
    const rows = await this.db.select().from(authenticators).where(eq(authenticators.id, id));
    return rows[0] ?? null;
  }

  private unique(a: Authenticator) {
    return {
      authenticators_username_key: { field: 'username', store: 'authenticators', value: a.username },
      authenticators_cert_fingerprint_key: {
        field: 'certPem',
        store: 'authenticators',
        value: a.certFingerprint,
        error: (v: unknown) =>
          new ApiError('CERT_IN_USE', { message: 'the certificate is already in use', data: { fingerprint: v } }),
      },
      authenticators_identity_method_key: {
        field: 'method',
        store: 'authenticators',
        value: a.method,
        error: (v: unknown) =>
          new ApiError('MAX_AUTHENTICATOR_METHODS_REACHED', {
            field: 'method',
            reason: `identity already has a ${String(v)} authenticator`,
            value: String(v),
          }),
      },
    };
  }

  async insert(a: Authenticator): Promise<void> {
    await withUniqueFields(() => this.db.insert(authenticators).values(a), this.unique(a));
  }

  async update(a: Authenticator): Promise<void> {
    const { id, createdAt: _c, ...rest } = a;
    await withUniqueFields(
      () => this.db.update(authenticators).set(rest).where(eq(authenticators.id, id)),
      this.unique(a),
    );
  }

  async delete(id: string): Promise<boolean> {
    return (
      (await this.db.delete(authenticators).where(eq(authenticators.id, id)).returning({ id: authenticators.id }))
        .length > 0
    );
  }

  async listByIdentity(identityId: string): Promise<Authenticator[]> {
    return this.db.select().from(authenticators).where(eq(authenticators.identityId, identityId));
  }

  async listByIdentities(identityIds: string[]): Promise<Authenticator[]> {
    if (identityIds.length === 0) return [];
    return this.db
      .select()
      .from(authenticators)
      .where(inArray(authenticators.identityId, [...new Set(identityIds)]));
  }

  async findByUsername(username: string): Promise<Authenticator | null> {
    const rows = await this.db
      .select()
      .from(authenticators)
      .where(and(eq(authenticators.username, username), eq(authenticators.method, 'updb')));
    return rows[0] ?? null;
  }

  async findByFingerprint(fingerprint: string): Promise<Authenticator | null> {
    const rows = await this.db
      .select()
      .from(authenticators)
      .where(and(eq(authenticators.certFingerprint, fingerprint), eq(authenticators.method, 'cert')));
    return rows[0] ?? null;
  }

  async list(input: ListInput, identityId?: string): Promise<ListPage<Authenticator>> {
    const scope = identityId ? { sql: 'a.identity_id = $1', params: [identityId] } : undefined;
    return toListPage(
      await listRows<Row>(this.db, authenticatorQuery, input, scope ? { scope } : {}),
      authenticatorFromRow,
    );
  }
}

export class PgIdentityTypeStore implements IdentityTypeStore {
  constructor(private readonly db: Db) {}

  async get(id: string): Promise<NamedEntity | null> {
    const rows = await this.db.select().from(identityTypes).where(eq(identityTypes.id, id));
    return rows[0] ?? null;
  }

  async list(input: ListInput): Promise<ListPage<NamedEntity>> {
    return toListPage(await listRows<Row>(this.db, identityTypeQuery, input), (r) => ({
      id: String(r.id),
      name: String(r.name),
      createdAt: date(r.created_at),
      updatedAt: date(r.updated_at),
    }));
  }

  async insertIfAbsent(t: NamedEntity): Promise<void> {
    await this.db.insert(identityTypes).values(t).onConflictDoNothing();
  }
}
