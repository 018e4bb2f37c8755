import { caEventTypes, caState, subjects } from '@ziti/contracts';
import type { Db, EventSubscription, Logger } from '@ziti/platform';
import type { CredentialService, CredentialStore } from '../domain/credential-service.ts';

/**
 * `ca.deleted` from pki-enrollment: the certificate authenticators the CA vouched for are deleted
 * (ZITI-FACTS §8.3; identities may be left unable to authenticate, as in the reference).
 */
export function caEventSubscription(
  credentials: CredentialService,
  store: (tx: Db) => CredentialStore,
  logger: Logger,
): EventSubscription {
  return {
    subject: subjects.event('pki-enrollment', caEventTypes.caDeleted.type),
    durable: 'auth-ca-deleted',
    handle: async (tx, event) => {
      const parsed = caState.safeParse(event.data);
      if (!parsed.success) {
        logger.error({ eventId: event.id, type: event.type }, 'ca event with an unknown shape; skipped');
        return;
      }
      const deleted = await credentials.deleteCertificatesOfCa({ credentials: store(tx) }, parsed.data);
      if (deleted > 0)
        logger.info({ caId: parsed.data.id, deleted }, 'certificate authenticators of a deleted CA removed');
    },
  };
}
