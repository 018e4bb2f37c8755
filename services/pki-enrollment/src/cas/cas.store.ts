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
import { arraySet, baseEntityFields, defineQueryEntity, scalar } from '@ziti/zitiql';
import type { Ca, ExternalIdClaim, ListInput, ListPage } from '../shared/model.domain.ts';
import type { Row } from '../shared/rows.store.ts';
import type { CaStore } from './cas.ports.ts';

/** Filterable fields of CAs (ZITI-FACTS §3.5). */
export const caQuery = defineQueryEntity({
  table: 'cas',
  alias: 'c',
  fields: {
    ...baseEntityFields('c'),
    name: scalar('c.name', 'string'),
    fingerprint: scalar('c.fingerprint', 'string'),
    isVerified: scalar('c.is_verified', 'boolean'),
    verificationToken: scalar('c.verification_token', 'string'),
    isAutoCaEnrollmentEnabled: scalar('c.is_auto_ca_enrollment_enabled', 'boolean'),
    isOttCaEnrollmentEnabled: scalar('c.is_ott_ca_enrollment_enabled', 'boolean'),
    isAuthEnabled: scalar('c.is_auth_enabled', 'boolean'),
    identityRoles: arraySet('c.identity_roles', 'string'),
  },
});

/** Maps a raw (snake_case) cas row. Every read and write of a CA is SQL (`queryRows`, `listRows`). */
function caFromRow(r: Row): Ca {
  return {
    id: String(r.id),
    name: String(r.name),
    fingerprint: String(r.fingerprint),
    certPem: String(r.cert_pem),
    isVerified: Boolean(r.is_verified),
    verificationToken: String(r.verification_token),
    isAutoCaEnrollmentEnabled: Boolean(r.is_auto_ca_enrollment_enabled),
    isOttCaEnrollmentEnabled: Boolean(r.is_ott_ca_enrollment_enabled),
    isAuthEnabled: Boolean(r.is_auth_enabled),
    identityRoles: (r.identity_roles as string[] | null) ?? [],
    identityNameFormat: String(r.identity_name_format),
    externalIdClaim: json<ExternalIdClaim | null>(r.external_id_claim, null),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

/**
 * A CA's columns as parameters `$1…$15` (id first, created_at `$14`, updated_at `$15`): jsonb as
 * JSON text (a null claim is SQL null), timestamps as ISO text.
 */
function caParams(ca: Ca): unknown[] {
  return [
    ca.id,
    ca.name,
    ca.fingerprint,
    ca.certPem,
    ca.isVerified,
    ca.verificationToken,
    ca.isAutoCaEnrollmentEnabled,
    ca.isOttCaEnrollmentEnabled,
    ca.isAuthEnabled,
    ca.identityRoles,
    ca.identityNameFormat,
    ca.externalIdClaim == null ? null : JSON.stringify(ca.externalIdClaim),
    JSON.stringify(ca.tags),
    ca.createdAt.toISOString(),
    ca.updatedAt.toISOString(),
  ];
}

const insertCa = `insert into cas (id, name, fingerprint, cert_pem, is_verified, verification_token,
    is_auto_ca_enrollment_enabled, is_ott_ca_enrollment_enabled, is_auth_enabled, identity_roles,
    identity_name_format, external_id_claim, tags, created_at, updated_at)
  values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text[], $11, $12::jsonb, $13::jsonb, $14::timestamptz,
    $15::timestamptz)`;

/** Every column but the id and the creation time (`caParams`; `$14` unused). */
const updateCa = `update cas set name = $2, fingerprint = $3, cert_pem = $4, is_verified = $5,
    verification_token = $6, is_auto_ca_enrollment_enabled = $7, is_ott_ca_enrollment_enabled = $8,
    is_auth_enabled = $9, identity_roles = $10::text[], identity_name_format = $11, external_id_claim = $12::jsonb,
    tags = $13::jsonb, updated_at = $15::timestamptz
  where id = $1`;

const caUnique = (ca: Ca) => ({
  cas_name_key: { field: 'name', store: 'cas', value: ca.name },
  cas_fingerprint_key: { field: 'certPem', store: 'cas', value: ca.fingerprint },
});

export class PgCaStore implements CaStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<Ca | null> {
    const [row] = await queryRows<Row>(this.db, `select * from cas where id = $1${lockClause(options)}`, [id]);
    return row ? caFromRow(row) : null;
  }

  async all(): Promise<Ca[]> {
    return (await queryRows<Row>(this.db, 'select * from cas order by created_at, id collate "C"')).map(caFromRow);
  }

  async list(input: ListInput): Promise<ListPage<Ca>> {
    return toListPage(await listRows<Row>(this.db, caQuery, input), caFromRow);
  }

  async insert(ca: Ca): Promise<void> {
    await withUniqueFields(() => queryRows(this.db, insertCa, caParams(ca)), caUnique(ca));
  }

  async update(ca: Ca): Promise<void> {
    await withUniqueFields(() => queryRows(this.db, updateCa, caParams(ca)), caUnique(ca));
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from cas where id = $1 returning id', [id])).length > 0;
  }

  async names(ids: string[]): Promise<Map<string, string>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    const rows = await queryRows<Row>(this.db, 'select id, name from cas where id = any($1::text[])', [unique]);
    return new Map(rows.map((r) => [String(r.id), String(r.name)]));
  }
}
