import type { EnrollmentStore } from '../enrollments/enrollments.ports.ts';
import type { SessionCertificateStore } from '../session-certificates/session-certificates.ports.ts';

/** The stores of the consumer's transaction; the enrollments' deletions are published with its commit. */
export interface AuthEventStores {
  enrollments: Pick<EnrollmentStore, 'deleteByIdentity'>;
  sessionCertificates: Pick<SessionCertificateStore, 'deleteBySession' | 'deleteByIdentity'>;
}

/**
 * What pki-enrollment does of auth's facts, in the transaction that consumes them: an API session
 * that ends (logout, removal, expiry) takes its certificates with it; a deleted identity takes its
 * enrollments (`enrollment.deleted`) and API-session certificates.
 */
export class AuthEventEffects {
  async apiSessionEnded(s: AuthEventStores, apiSessionId: string): Promise<void> {
    await s.sessionCertificates.deleteBySession(apiSessionId);
  }

  async identityDeleted(s: AuthEventStores, identityId: string): Promise<void> {
    await s.enrollments.deleteByIdentity(identityId);
    await s.sessionCertificates.deleteByIdentity(identityId);
  }
}
