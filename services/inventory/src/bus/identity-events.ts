import { eventTypes, subjects } from '@ziti/contracts';
import type { Db, EventSubscription, Logger } from '@ziti/platform';
import type { IdentityServiceConfigStore } from '../domain/ports.ts';

/** A deleted identity loses its service config overrides (auth's `identity.deleted`; idempotent). */
export function identityEventSubscription(
  store: (tx: Db) => IdentityServiceConfigStore,
  logger: Logger,
): EventSubscription {
  return {
    subject: subjects.event('auth', eventTypes.identityDeleted.type),
    durable: 'inventory-identity-deletions',
    handle: async (tx, event) => {
      const id = (event.data as { id?: unknown } | null)?.id;
      if (typeof id !== 'string') {
        logger.error({ eventId: event.id, type: event.type }, 'identity event without an id; skipped');
        return;
      }
      const removed = await store(tx).deleteByIdentity(id);
      if (removed > 0) logger.info({ identityId: id, removed }, 'removed the service configs of a deleted identity');
    },
  };
}
