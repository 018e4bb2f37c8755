import { type Database, type Db, queryRows } from '@ziti/platform';
import type { SealedRecord, SealedRecords } from '@ziti/platform/secret-box';
import type { SealedTables } from '@ziti/platform/secret-key-rotation';

/**
 * The controller PKI's private keys (root, signer, server), each bound to its name (context
 * `pki:<name>`, as `ControllerPkiService` seals them); rows without a key (an operator-supplied
 * root) are not walked.
 */
export class PgSealedPkiMaterial implements SealedRecords {
  constructor(private readonly tx: Db) {}

  async lock(after: string | undefined, limit: number): Promise<SealedRecord[]> {
    const rows = await queryRows<{ name: string; key_encrypted: string }>(
      this.tx,
      `select name, key_encrypted from pki_material
        where key_encrypted is not null and ($1::text is null or name collate "C" > $1)
        order by name collate "C" limit $2 for update`,
      [after ?? null, limit],
    );
    return rows.map((r) => ({
      key: r.name,
      fields: [{ name: 'key_encrypted', context: `pki:${r.name}`, token: r.key_encrypted }],
    }));
  }

  async write(key: string, fields: Record<string, string>): Promise<void> {
    if (fields.key_encrypted === undefined) return;
    // The certificate stays: a concurrent renewal (`replace`) compares it, and waits for this row's lock.
    await queryRows(this.tx, 'update pki_material set key_encrypted = $2 where name = $1', [key, fields.key_encrypted]);
  }
}

/**
 * The enrollments' token and JWT, each bound to the enrollment and the field (contexts
 * `enrollment:<id>:token` and `enrollment:<id>:jwt`, as `PgEnrollmentStore` seals them).
 */
export class PgSealedEnrollments implements SealedRecords {
  constructor(private readonly tx: Db) {}

  async lock(after: string | undefined, limit: number): Promise<SealedRecord[]> {
    const rows = await queryRows<{ id: string; token_encrypted: string; jwt_encrypted: string }>(
      this.tx,
      `select id, token_encrypted, jwt_encrypted from enrollments
        where $1::text is null or id collate "C" > $1
        order by id collate "C" limit $2 for update`,
      [after ?? null, limit],
    );
    return rows.map((r) => ({
      key: r.id,
      fields: [
        { name: 'token_encrypted', context: `enrollment:${r.id}:token`, token: r.token_encrypted },
        { name: 'jwt_encrypted', context: `enrollment:${r.id}:jwt`, token: r.jwt_encrypted },
      ],
    }));
  }

  async write(key: string, fields: Record<string, string>): Promise<void> {
    // The columns are named here, never taken from the caller.
    await queryRows(
      this.tx,
      `update enrollments set token_encrypted = coalesce($2, token_encrypted), jwt_encrypted = coalesce($3, jwt_encrypted)
        where id = $1`,
      [key, fields.token_encrypted ?? null, fields.jwt_encrypted ?? null],
    );
  }
}

const bind: Record<string, (tx: Db) => SealedRecords> = {
  pki_material: (tx) => new PgSealedPkiMaterial(tx),
  enrollments: (tx) => new PgSealedEnrollments(tx),
};

/** pki-enrollment's tables with sealed values, over its database. */
export function pgSealedTables(database: Database): SealedTables {
  return {
    tables: Object.keys(bind),
    transaction: (table, fn) => {
      const records = bind[table];
      if (!records) throw new Error(`pki-enrollment seals nothing in ${table}`);
      return database.transaction((tx) => fn(records(tx)));
    },
  };
}
