import {
  type Db,
  type LockOption,
  date,
  dateOrNull,
  json,
  listRows,
  lockedRows,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import { eq } from 'drizzle-orm';
import type { ExternalJwtSigner } from '../domain/ext-jwt-signer.ts';
import type { ListInput, ListPage } from '../domain/model.ts';
import type { ExternalJwtSignerStore } from '../domain/ports.ts';
import { externalJwtSignerQuery } from './query-entities.ts';
import { externalJwtSigners } from './schema.ts';

type Row = Record<string, unknown>;

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
