import { eventTypes, identityState } from '@ziti/contracts';
import type { Db, EventEnvelope, EventSink, EventSubscription } from '@ziti/platform';
import { parseEventData } from '@ziti/platform';
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
      ...[eventTypes.apiSessionDeleted, eventTypes.apiSessionExpired].map((def) => ({
        type: def.type,
        versions: [1, 2],
        handle: async (tx: Db, event: EventEnvelope, events: EventSink) => {
          await stores(tx, events).sessionCertificates.deleteBySession(parseEventData(apiSessionRef, event).id);
        },
      })),
      {
        type: eventTypes.identityDeleted.type,
        // The enrollments' deletions are published with this consumer's commit (enrollment.deleted).
        handle: async (tx, event, events) => {
          const { id } = parseEventData(identityState.pick({ id: true }), event);
          const s = stores(tx, events);
          await s.enrollments.deleteByIdentity(id);
          await s.sessionCertificates.deleteByIdentity(id);
        },
      },
    ],
  };
}
