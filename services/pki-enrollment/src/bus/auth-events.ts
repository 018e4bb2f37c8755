import { eventTypes, identityState } from '@ziti/contracts';
import type { Db, EventSink, EventSubscription } from '@ziti/platform';
import { on } from '@ziti/platform';
import { z } from 'zod';
import type { EnrollmentStore, SessionCertificateStore } from '../domain/ports.ts';

const apiSessionRef = z.object({ id: z.string(), identityId: z.string() });

/**
 * What pki-enrollment follows of auth: an API session that ends (logout, removal, expiry) takes its
 * certificates with it; a deleted identity takes its enrollments and API-session certificates.
 */
export function authEventSubscription(
  stores: (tx: Db, events: EventSink) => { enrollments: EnrollmentStore; sessionCertificates: SessionCertificateStore },
): EventSubscription {
  return {
    source: 'auth',
    handlers: [
      // Only the session's id is read, which every version carries.
      ...[eventTypes.apiSessionDeleted, eventTypes.apiSessionExpired].map((def) =>
        on(
          def,
          async (tx, session, _event, events) => {
            await stores(tx, events).sessionCertificates.deleteBySession(session.id);
          },
          { versions: [1, 2], read: apiSessionRef },
        ),
      ),
      // The enrollments' deletions are published with this consumer's commit (enrollment.deleted).
      on(
        eventTypes.identityDeleted,
        async (tx, { id }, _event, events) => {
          const s = stores(tx, events);
          await s.enrollments.deleteByIdentity(id);
          await s.sessionCertificates.deleteByIdentity(id);
        },
        { read: identityState.pick({ id: true }) },
      ),
    ],
  };
}
