import { ApiError } from '@ziti/contracts';
import { type Db, lockedRows, queryRows, withUniqueFields } from '@ziti/platform';
import { eq } from 'drizzle-orm';
import type { MfaStore, StoredMfa } from '../domain/ports.ts';
import { mfa } from './schema.ts';

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
