import { ApiError } from '@ziti/contracts';
import { type Db, date, json, lockClause, queryRows, withUniqueFields } from '@ziti/platform';
import type { MfaStore, StoredMfa } from './mfas.ports.ts';

type Row = Record<string, unknown>;

const mfaColumns = 'id, identity_id, is_verified, secret, recovery_codes, tags, created_at, updated_at';

export class PgMfaStore implements MfaStore {
  constructor(private readonly db: Db) {}

  private static toDomain(r: Row): StoredMfa {
    return {
      id: String(r.id),
      identityId: String(r.identity_id),
      isVerified: Boolean(r.is_verified),
      sealedSecret: String(r.secret),
      sealedRecoveryCodes: String(r.recovery_codes),
      tags: json(r.tags, {}),
      createdAt: date(r.created_at),
      updatedAt: date(r.updated_at),
    };
  }

  async getByIdentity(identityId: string, forUpdate = false): Promise<StoredMfa | null> {
    const [row] = await queryRows<Row>(
      this.db,
      `select ${mfaColumns} from mfa where identity_id = $1${lockClause({ forUpdate })}`,
      [identityId],
    );
    return row ? PgMfaStore.toDomain(row) : null;
  }

  async insert(m: StoredMfa): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(this.db, `insert into mfa (${mfaColumns}) values ($1, $2, $3, $4, $5, $6::jsonb, $7, $8)`, [
          m.id,
          m.identityId,
          m.isVerified,
          m.sealedSecret,
          m.sealedRecoveryCodes,
          JSON.stringify(m.tags),
          m.createdAt,
          m.updatedAt,
        ]),
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
    await queryRows(
      this.db,
      `update mfa set is_verified = $2, secret = $3, recovery_codes = $4, tags = $5::jsonb, updated_at = $6
        where id = $1`,
      [m.id, m.isVerified, m.sealedSecret, m.sealedRecoveryCodes, JSON.stringify(m.tags), m.updatedAt],
    );
  }

  async deleteByIdentity(identityId: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from mfa where identity_id = $1 returning id', [identityId])).length > 0;
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
