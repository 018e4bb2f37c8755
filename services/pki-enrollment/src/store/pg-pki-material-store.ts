import type { Db } from '@ziti/platform';
import { and, eq, sql } from 'drizzle-orm';
import type { PkiMaterialStore, StoredMaterial } from '../domain/ports.ts';
import { pkiMaterial } from './schema.ts';

export class PgPkiMaterialStore implements PkiMaterialStore {
  constructor(private readonly db: Db) {}

  async load(name: StoredMaterial['name']): Promise<StoredMaterial | null> {
    const rows = await this.db.select().from(pkiMaterial).where(eq(pkiMaterial.name, name));
    const row = rows[0];
    return row ? { name, certPem: row.certPem, keyEncrypted: row.keyEncrypted } : null;
  }

  async insertIfAbsent(material: StoredMaterial): Promise<StoredMaterial> {
    await this.db
      .insert(pkiMaterial)
      .values({ name: material.name, certPem: material.certPem, keyEncrypted: material.keyEncrypted })
      .onConflictDoNothing();
    return (await this.load(material.name))!;
  }

  async replace(material: StoredMaterial, previousCertPem: string): Promise<StoredMaterial> {
    await this.db
      .update(pkiMaterial)
      .set({ certPem: material.certPem, keyEncrypted: material.keyEncrypted, updatedAt: sql`now()` })
      .where(and(eq(pkiMaterial.name, material.name), eq(pkiMaterial.certPem, previousCertPem)));
    return (await this.load(material.name))!;
  }
}
