import { type Database, type Db, queryRows } from '@ziti/platform';
import type { SealedRecord, SealedRecords } from '@ziti/platform/secret-box';
import type { SealedTables } from '@ziti/platform/secret-key-rotation';

/**
 * The MFA records' sealed TOTP secret and recovery codes, bound to the identity (context
 * `mfa:<identityId>`, as `MfaService` seals them). Rows are walked by id in bytewise order.
 */
export class PgSealedMfa implements SealedRecords {
  constructor(private readonly tx: Db) {}

  async lock(after: string | undefined, limit: number): Promise<SealedRecord[]> {
    const rows = await queryRows<{ id: string; identity_id: string; secret: string; recovery_codes: string }>(
      this.tx,
      `select id, identity_id, secret, recovery_codes from mfa
        where $1::text is null or id collate "C" > $1
        order by id collate "C" limit $2 for update`,
      [after ?? null, limit],
    );
    return rows.map((r) => ({
      key: r.id,
      fields: [
        { name: 'secret', context: `mfa:${r.identity_id}`, token: r.secret },
        { name: 'recovery_codes', context: `mfa:${r.identity_id}`, token: r.recovery_codes },
      ],
    }));
  }

  async write(key: string, fields: Record<string, string>): Promise<void> {
    // The columns are named here, never taken from the caller: only these two are sealed.
    await queryRows(
      this.tx,
      'update mfa set secret = coalesce($2, secret), recovery_codes = coalesce($3, recovery_codes) where id = $1',
      [key, fields.secret ?? null, fields.recovery_codes ?? null],
    );
  }
}

/** auth's tables with sealed values, over its database. */
export function pgSealedTables(database: Database): SealedTables {
  return {
    tables: ['mfa'],
    transaction: (table, fn) => {
      if (table !== 'mfa') throw new Error(`auth seals nothing in ${table}`);
      return database.transaction((tx) => fn(new PgSealedMfa(tx)));
    },
  };
}
