import {
  type Db,
  type LockOption,
  date,
  dateOrNull,
  json,
  listRows,
  lockClause,
  queryRows,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import type { ExternalJwtSigner } from './external-jwt-signer.domain.ts';
import type { ListInput, ListPage } from '../shared/model.domain.ts';
import type { ExternalJwtSignerStore } from './external-jwt-signers.ports.ts';
import { externalJwtSignerQuery } from '../shared/query-entities.store.ts';

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

/** The columns of a signer, named. */
const signerColumns = `id, name, enabled, issuer, audience, cert_pem, fingerprint, common_name, not_before, not_after,
  kid, jwks_endpoint, claims_property, use_external_id, external_auth_url, client_id, scopes, tags, created_at,
  updated_at`;
const signerById = `select ${signerColumns} from external_jwt_signers where id = $1`;

/** A signer's columns in `signerColumns` order, as statement parameters. */
function signerValues(s: ExternalJwtSigner): unknown[] {
  return [
    s.id,
    s.name,
    s.enabled,
    s.issuer,
    s.audience,
    s.certPem,
    s.fingerprint,
    s.commonName,
    s.notBefore,
    s.notAfter,
    s.kid,
    s.jwksEndpoint,
    s.claimsProperty,
    s.useExternalId,
    s.externalAuthUrl,
    s.clientId,
    s.scopes,
    JSON.stringify(s.tags),
    s.createdAt,
    s.updatedAt,
  ];
}

const insertSigner = `insert into external_jwt_signers (${signerColumns})
  values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17::text[], $18::jsonb, $19, $20)`;
/** Every column but `created_at` (`$19`, unused) from `signerValues`. */
const updateSigner = `update external_jwt_signers set name = $2, enabled = $3, issuer = $4, audience = $5,
  cert_pem = $6, fingerprint = $7, common_name = $8, not_before = $9, not_after = $10, kid = $11,
  jwks_endpoint = $12, claims_property = $13, use_external_id = $14, external_auth_url = $15, client_id = $16,
  scopes = $17::text[], tags = $18::jsonb, updated_at = $20
  where id = $1`;

export class PgExternalJwtSignerStore implements ExternalJwtSignerStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<ExternalJwtSigner | null> {
    const [row] = await queryRows<Row>(this.db, `${signerById}${lockClause(options)}`, [id]);
    return row ? signerFromRow(row) : null;
  }

  async findByIssuer(issuer: string): Promise<ExternalJwtSigner | null> {
    const [row] = await queryRows<Row>(this.db, `select ${signerColumns} from external_jwt_signers where issuer = $1`, [
      issuer,
    ]);
    return row ? signerFromRow(row) : null;
  }

  private unique(s: ExternalJwtSigner) {
    return {
      external_jwt_signers_name_key: { field: 'name', store: 'externalJwtSigners', value: s.name },
      external_jwt_signers_issuer_key: { field: 'issuer', store: 'externalJwtSigners', value: s.issuer },
      external_jwt_signers_kid_key: { field: 'kid', store: 'externalJwtSigners', value: s.kid },
    };
  }

  async insert(s: ExternalJwtSigner): Promise<void> {
    await withUniqueFields(() => queryRows(this.db, insertSigner, signerValues(s)), this.unique(s));
  }

  async update(s: ExternalJwtSigner): Promise<void> {
    await withUniqueFields(() => queryRows(this.db, updateSigner, signerValues(s)), this.unique(s));
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from external_jwt_signers where id = $1 returning id', [id])).length > 0;
  }

  async list(input: ListInput, onlyWithAuthUrl = false): Promise<ListPage<ExternalJwtSigner>> {
    const scope = onlyWithAuthUrl
      ? { scope: { sql: "j.enabled and coalesce(j.external_auth_url, '') <> ''", params: [] } }
      : {};
    return toListPage(await listRows<Row>(this.db, externalJwtSignerQuery, input, scope), signerFromRow);
  }
}
