import { eventTypes, identityState, subjects } from '@ziti/contracts';
import type { Db, EventSubscription, Logger } from '@ziti/platform';
import { z } from 'zod';
import type { EnrollmentStore, SessionCertificateStore } from '../domain/ports.ts';

const apiSessionDeleted = z.object({ id: z.string(), identityId: z.string() });

/**
 * What pki-enrollment follows of auth: a logout takes the API session's certificates with it; a
 * deleted identity takes its enrollments and API-session certificates.
 */
export function authEventSubscriptions(
  stores: (tx: Db) => { enrollments: EnrollmentStore; sessionCertificates: SessionCertificateStore },
  logger: Logger,
): EventSubscription[] {
  return [
    {
      subject: subjects.event('auth', eventTypes.apiSessionDeleted.type),
      durable: 'pki-api-sessions',
      handle: async (tx, event) => {
        const parsed = apiSessionDeleted.safeParse(event.data);
        if (!parsed.success) {
          logger.error({ eventId: event.id, type: event.type }, 'apiSession event with an unknown shape; skipped');
          return;
        }
        await stores(tx).sessionCertificates.deleteBySession(parsed.data.id);
      },
    },
    {
      subject: subjects.event('auth', eventTypes.identityDeleted.type),
      durable: 'pki-identities',
      handle: async (tx, event) => {
        const parsed = identityState.safeParse(event.data);
        if (!parsed.success) {
          logger.error({ eventId: event.id, type: event.type }, 'identity event with an unknown shape; skipped');
          return;
        }
        const s = stores(tx);
        await s.enrollments.deleteByIdentity(parsed.data.id);
        await s.sessionCertificates.deleteByIdentity(parsed.data.id);
      },
    },
  ];
}
