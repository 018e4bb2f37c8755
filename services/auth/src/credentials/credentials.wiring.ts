import type { EventSubscription } from '@ziti/platform';
import { createUnitOfWork } from '@ziti/platform';
import { type AuthCore, bindAuthStores } from '../shared/core.wiring.ts';
import { caEventSubscription } from './ca-events.transport.ts';
import { CredentialService, type CredentialStores } from './credentials.domain.ts';
import { PgCredentialStore } from './credentials.store.ts';

/**
 * Enrollment's credentials (passwords and certificates an enrollment sets, which touch the
 * certificate columns of authenticators too) and what CA events do to them.
 */
export function credentialsWiring(core: AuthCore): { credentials: CredentialService; subscription: EventSubscription } {
  const work = createUnitOfWork<CredentialStores>(core.database, core.relay, 'auth', (tx, events) => ({
    ...bindAuthStores(tx, events),
    credentials: new PgCredentialStore(tx),
  }));
  const credentials = new CredentialService(work, core.hasher, core.sessions);
  return {
    credentials,
    subscription: caEventSubscription(credentials, (tx) => new PgCredentialStore(tx), core.logger),
  };
}
