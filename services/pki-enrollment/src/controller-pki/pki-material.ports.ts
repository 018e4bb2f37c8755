/** A certificate (chain) with its private key encrypted at rest. */
export interface StoredMaterial {
  name: 'root' | 'signer' | 'server';
  certPem: string;
  /** SecretBox token of the PKCS#8 key; null when the key is not kept here (operator-supplied root). */
  keyEncrypted: string | null;
}

export interface PkiMaterialStore {
  load(name: StoredMaterial['name']): Promise<StoredMaterial | null>;
  /** Inserts unless present and returns what is stored afterwards: the winner when replicas race. */
  insertIfAbsent(material: StoredMaterial): Promise<StoredMaterial>;
  /** Replaces the material only if it still has `previousCertPem`; returns what is stored afterwards. */
  replace(material: StoredMaterial, previousCertPem: string): Promise<StoredMaterial>;
}
