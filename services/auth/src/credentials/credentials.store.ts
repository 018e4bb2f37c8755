import type { AuthenticatorFacts } from '../shared/credential-events.domain.ts';
import { ApiError } from '@ziti/contracts';
import { type Db, date, queryRows, uniqueViolation } from '@ziti/platform';
import type { CertificateState, CredentialStore } from './credentials.domain.ts';

/**
 * The certificate columns of authenticators that enrollment adds (migration 0003): the issuing CA
 * and a certificate staged by extension. The authenticator store (authenticators/authenticators.store.ts)
 * keeps owning the rest of the row.
 */
export class PgCredentialStore implements CredentialStore {
  constructor(private readonly db: Db) {}

  async certificateState(authenticatorId: string): Promise<CertificateState | null> {
    const rows = await queryRows<{
      ca_id: string | null;
      unverified_cert_pem: string | null;
      unverified_cert_fingerprint: string | null;
    }>(this.db, 'select ca_id, unverified_cert_pem, unverified_cert_fingerprint from authenticators where id = $1', [
      authenticatorId,
    ]);
    const r = rows[0];
    return r
      ? {
          caId: r.ca_id,
          unverifiedCertPem: r.unverified_cert_pem,
          unverifiedCertFingerprint: r.unverified_cert_fingerprint,
        }
      : null;
  }

  async setCa(authenticatorId: string, caId: string | null): Promise<void> {
    await queryRows(this.db, 'update authenticators set ca_id = $2 where id = $1', [authenticatorId, caId]);
  }

  async stage(authenticatorId: string, certPem: string, fingerprint: string, at: Date): Promise<void> {
    await queryRows(
      this.db,
      'update authenticators set unverified_cert_pem = $2, unverified_cert_fingerprint = $3, updated_at = $4 where id = $1',
      [authenticatorId, certPem, fingerprint, at.toISOString()],
    );
  }

  async promote(authenticatorId: string, fingerprint: string, at: Date): Promise<boolean> {
    try {
      const rows = await queryRows(
        this.db,
        `update authenticators
            set cert_pem = unverified_cert_pem, cert_fingerprint = unverified_cert_fingerprint,
                unverified_cert_pem = null, unverified_cert_fingerprint = null, updated_at = $3
          where id = $1 and unverified_cert_fingerprint = $2
          returning id`,
        [authenticatorId, fingerprint, at.toISOString()],
      );
      return rows.length > 0;
    } catch (err) {
      if (uniqueViolation(err) !== undefined) {
        throw new ApiError('CERT_IN_USE', { message: 'the certificate is already in use', data: { fingerprint } });
      }
      throw err;
    }
  }

  async idsIssuedBy(caId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(this.db, 'select id from authenticators where ca_id = $1', [caId]);
    return rows.map((r) => r.id);
  }

  async certificatesWithoutCa(afterId: string, limit: number): Promise<{ id: string; certPem: string }[]> {
    const rows = await queryRows<{ id: string; cert_pem: string }>(
      this.db,
      `select id, cert_pem from authenticators
        where method = 'cert' and ca_id is null and cert_pem is not null and id > $1
        order by id limit $2`,
      [afterId, limit],
    );
    return rows.map((r) => ({ id: r.id, certPem: r.cert_pem }));
  }

  async deleteMany(ids: string[]): Promise<AuthenticatorFacts[]> {
    if (ids.length === 0) return [];
    const rows = await queryRows<{
      id: string;
      identity_id: string;
      method: string;
      username: string | null;
      cert_fingerprint: string | null;
      created_at: Date | string;
      updated_at: Date | string;
    }>(
      this.db,
      `delete from authenticators where id = any($1::text[])
       returning id, identity_id, method, username, cert_fingerprint, created_at, updated_at`,
      [ids],
    );
    return rows.map((r) => ({
      id: r.id,
      identityId: r.identity_id,
      method: r.method as AuthenticatorFacts['method'],
      username: r.username,
      certFingerprint: r.cert_fingerprint,
      createdAt: date(r.created_at),
      updatedAt: date(r.updated_at),
    }));
  }
}
