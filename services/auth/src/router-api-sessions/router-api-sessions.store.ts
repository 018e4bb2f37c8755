import { type Db, queryRows } from '@ziti/platform';
import type { CertificateFingerprints } from './router-api-sessions.ports.ts';

/** One statement for a page of identities: their current certificates' fingerprints. */
export class PgCertificateFingerprints implements CertificateFingerprints {
  constructor(private readonly db: Db) {}

  async ofIdentities(identityIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (identityIds.length === 0) return out;
    const rows = await queryRows<{ identity_id: string; cert_fingerprint: string }>(
      this.db,
      `select identity_id, cert_fingerprint from authenticators
        where identity_id = any($1::text[]) and cert_fingerprint is not null`,
      [[...new Set(identityIds)]],
    );
    for (const r of rows) out.set(r.identity_id, [...(out.get(r.identity_id) ?? []), r.cert_fingerprint]);
    return out;
  }
}
