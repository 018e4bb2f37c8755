import { type Db, queryRows, strOrNull } from '@ziti/platform';
import type { Row } from '../shared/rows.store.ts';
import type { PkiMaterialStore, StoredMaterial } from './pki-material.ports.ts';

export class PgPkiMaterialStore implements PkiMaterialStore {
  constructor(private readonly db: Db) {}

  async load(name: StoredMaterial['name']): Promise<StoredMaterial | null> {
    const rows = await queryRows<Row>(this.db, 'select cert_pem, key_encrypted from pki_material where name = $1', [
      name,
    ]);
    const row = rows[0];
    return row ? { name, certPem: String(row.cert_pem), keyEncrypted: strOrNull(row.key_encrypted) } : null;
  }

  async insertIfAbsent(material: StoredMaterial): Promise<StoredMaterial> {
    await queryRows(
      this.db,
      'insert into pki_material (name, cert_pem, key_encrypted) values ($1, $2, $3) on conflict do nothing',
      [material.name, material.certPem, material.keyEncrypted],
    );
    return (await this.load(material.name))!;
  }

  async replace(material: StoredMaterial, previousCertPem: string): Promise<StoredMaterial> {
    await queryRows(
      this.db,
      `update pki_material set cert_pem = $3, key_encrypted = $4, updated_at = now()
        where name = $1 and cert_pem = $2`,
      [material.name, previousCertPem, material.certPem, material.keyEncrypted],
    );
    return (await this.load(material.name))!;
  }
}
