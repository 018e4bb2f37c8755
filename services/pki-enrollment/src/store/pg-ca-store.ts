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
import { eq, inArray } from 'drizzle-orm';
import type { Ca, ExternalIdClaim, ListInput, ListPage } from '../domain/model.ts';
import type { CaStore } from '../domain/ports.ts';
import type { Row } from './pg-store-helpers.ts';
import { caQuery } from './query-entities.ts';
import { cas } from './schema.ts';

/**
 * Maps a raw (snake_case) cas row. Every read of a CA is SQL (`queryRows`, `listRows`), so rows
 * come in one shape; drizzle writes them.
 */
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
    await withUniqueFields(() => this.db.insert(cas).values(ca), caUnique(ca));
  }

  async update(ca: Ca): Promise<void> {
    const { id, createdAt: _c, ...rest } = ca;
    await withUniqueFields(() => this.db.update(cas).set(rest).where(eq(cas.id, id)), caUnique(ca));
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.delete(cas).where(eq(cas.id, id)).returning({ id: cas.id })).length > 0;
  }

  async names(ids: string[]): Promise<Map<string, string>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    const rows = await this.db.select({ id: cas.id, name: cas.name }).from(cas).where(inArray(cas.id, unique));
    return new Map(rows.map((r) => [r.id, r.name]));
  }
}
