import { caEventTypes } from '@ziti/contracts';
import type { Db, EventSubscription, Logger } from '@ziti/platform';
import { on } from '@ziti/platform';
import type { CredentialService, CredentialStore } from './credentials.domain.ts';

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
    source: 'pki-enrollment',
    handlers: [
      on(caEventTypes.caDeleted, async (tx, ca, _event, events) => {
        const deleted = await credentials.deleteCertificatesOfCa({ credentials: store(tx), events }, ca);
        if (deleted > 0) logger.info({ caId: ca.id, deleted }, 'certificate authenticators of a deleted CA removed');
      }),
    ],
  };
}
