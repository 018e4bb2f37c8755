import { ApiError } from '@ziti/contracts';
import {
  type Db,
  type LockOption,
  date,
  dateOrNull,
  json,
  listRows,
  lockClause,
  lockedRows,
  queryRows,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import { eq, sql } from 'drizzle-orm';
import { type AuthPolicy, normalizePrimary, normalizeSecondary } from '../domain/auth-policy.ts';
import type { ExternalJwtSigner } from '../domain/ext-jwt-signer.ts';
import type { ListInput, ListPage } from '../domain/model.ts';
import type {
  AuthPolicyStore,
  ExternalJwtSignerStore,
  IdentityTrace,
  IdentityTraceStore,
  LoginAttemptStore,
  MfaStore,
  StoredMfa,
} from '../domain/ports.ts';
import { externalJwtSigners, identityTraces, mfa, updbFailedAttempts } from './authentication-schema.ts';
import { authPolicyQuery, externalJwtSignerQuery } from './authentication-query-entities.ts';
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

function signerFromRow(r: Row): ExternalJwtSigner {
  return {
    id: String(r.id),
    name: String(r.name),
    enabled: Boolean(r.enabled),
    issuer: String(r.issuer),
    audience: (r.audience as string | null) ?? null,
    certPem: (r.cert_pem as string | null) ?? null,
    fingerprint: (r.fingerprint as string | null) ?? null,
    commonName: (r.common_name as string | null) ?? null,
    notBefore: dateOrNull(r.not_before),
    notAfter: dateOrNull(r.not_after),
    kid: (r.kid as string | null) ?? null,
    jwksEndpoint: (r.jwks_endpoint as string | null) ?? null,
    claimsProperty: (r.claims_property as string | null) ?? null,
    useExternalId: Boolean(r.use_external_id),
    externalAuthUrl: (r.external_auth_url as string | null) ?? null,
    clientId: (r.client_id as string | null) ?? null,
    scopes: (r.scopes as string[] | null) ?? [],
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export class PgExternalJwtSignerStore implements ExternalJwtSignerStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<ExternalJwtSigner | null> {
    const query = this.db.select().from(externalJwtSigners).where(eq(externalJwtSigners.id, id));
    const rows = await lockedRows(query, options);
    return rows[0] ?? null;
  }

  async findByIssuer(issuer: string): Promise<ExternalJwtSigner | null> {
    const rows = await this.db.select().from(externalJwtSigners).where(eq(externalJwtSigners.issuer, issuer));
    return rows[0] ?? null;
  }

  private unique(s: ExternalJwtSigner) {
    return {
      external_jwt_signers_name_key: { field: 'name', store: 'externalJwtSigners', value: s.name },
      external_jwt_signers_issuer_key: { field: 'issuer', store: 'externalJwtSigners', value: s.issuer },
      external_jwt_signers_kid_key: { field: 'kid', store: 'externalJwtSigners', value: s.kid },
    };
  }

  async insert(s: ExternalJwtSigner): Promise<void> {
    await withUniqueFields(() => this.db.insert(externalJwtSigners).values(s), this.unique(s));
  }

  async update(s: ExternalJwtSigner): Promise<void> {
    const { id, createdAt: _c, ...rest } = s;
    await withUniqueFields(
      () => this.db.update(externalJwtSigners).set(rest).where(eq(externalJwtSigners.id, id)),
      this.unique(s),
    );
  }

  async delete(id: string): Promise<boolean> {
    return (
      (
        await this.db
          .delete(externalJwtSigners)
          .where(eq(externalJwtSigners.id, id))
          .returning({ id: externalJwtSigners.id })
      ).length > 0
    );
  }

  async list(input: ListInput, onlyWithAuthUrl = false): Promise<ListPage<ExternalJwtSigner>> {
    const scope = onlyWithAuthUrl
      ? { scope: { sql: "j.enabled and coalesce(j.external_auth_url, '') <> ''", params: [] } }
      : {};
    return toListPage(await listRows<Row>(this.db, externalJwtSignerQuery, input, scope), signerFromRow);
  }
}

export class PgMfaStore implements MfaStore {
  constructor(private readonly db: Db) {}

  private static toDomain(r: typeof mfa.$inferSelect): StoredMfa {
    return {
      id: r.id,
      identityId: r.identityId,
      isVerified: r.isVerified,
      sealedSecret: r.secret,
      sealedRecoveryCodes: r.recoveryCodes,
      tags: r.tags ?? {},
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    };
  }

  async getByIdentity(identityId: string, forUpdate = false): Promise<StoredMfa | null> {
    const query = this.db.select().from(mfa).where(eq(mfa.identityId, identityId));
    const rows = await lockedRows(query, { forUpdate });
    return rows[0] ? PgMfaStore.toDomain(rows[0]) : null;
  }

  async insert(m: StoredMfa): Promise<void> {
    await withUniqueFields(
      () =>
        this.db.insert(mfa).values({
          id: m.id,
          identityId: m.identityId,
          isVerified: m.isVerified,
          secret: m.sealedSecret,
          recoveryCodes: m.sealedRecoveryCodes,
          tags: m.tags,
          createdAt: m.createdAt,
          updatedAt: m.updatedAt,
        }),
      {
        mfa_identity_key: {
          field: 'identityId',
          store: 'mfa',
          value: m.identityId,
          error: () => new ApiError('MFA_EXISTS'),
        },
      },
    );
  }

  async update(m: StoredMfa): Promise<void> {
    await this.db
      .update(mfa)
      .set({
        isVerified: m.isVerified,
        secret: m.sealedSecret,
        recoveryCodes: m.sealedRecoveryCodes,
        tags: m.tags,
        updatedAt: m.updatedAt,
      })
      .where(eq(mfa.id, m.id));
  }

  async deleteByIdentity(identityId: string): Promise<boolean> {
    return (await this.db.delete(mfa).where(eq(mfa.identityId, identityId)).returning({ id: mfa.id })).length > 0;
  }

  async verifiedAmong(identityIds: string[]): Promise<Set<string>> {
    if (identityIds.length === 0) return new Set();
    const rows = await queryRows<{ identity_id: string }>(
      this.db,
      'select identity_id from mfa where identity_id = any($1::text[]) and is_verified',
      [[...new Set(identityIds)]],
      { prepare: true },
    );
    return new Set(rows.map((r) => r.identity_id));
  }
}

export class PgLoginAttemptStore implements LoginAttemptStore {
  constructor(private readonly db: Db) {}

  async recordFailure(authenticatorId: string, at: Date): Promise<number> {
    const rows = await this.db
      .insert(updbFailedAttempts)
      .values({ authenticatorId, attempts: 1, lastFailedAt: at })
      .onConflictDoUpdate({
        target: updbFailedAttempts.authenticatorId,
        set: { attempts: sql`${updbFailedAttempts.attempts} + 1`, lastFailedAt: at },
      })
      .returning({ attempts: updbFailedAttempts.attempts });
    return rows[0]?.attempts ?? 1;
  }

  async reset(authenticatorId: string): Promise<void> {
    await this.db.delete(updbFailedAttempts).where(eq(updbFailedAttempts.authenticatorId, authenticatorId));
  }
}

export class PgIdentityTraceStore implements IdentityTraceStore {
  constructor(private readonly db: Db) {}

  async get(identityId: string): Promise<IdentityTrace | null> {
    const rows = await this.db.select().from(identityTraces).where(eq(identityTraces.identityId, identityId));
    return rows[0] ?? null;
  }

  async put(t: IdentityTrace): Promise<void> {
    await this.db
      .insert(identityTraces)
      .values(t)
      .onConflictDoUpdate({
        target: identityTraces.identityId,
        set: { enabled: t.enabled, traceId: t.traceId, until: t.until, channels: t.channels, updatedAt: t.updatedAt },
      });
  }
}
