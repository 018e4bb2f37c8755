import { eventTypes, identityState } from '@ziti/contracts';
import type { Db, EventSink, EventSubscription, Logger } from '@ziti/platform';
import { on } from '@ziti/platform';
import type { IdentityServiceConfigService } from './identity-service-configs.domain.ts';
import type { OverrideStores } from './identity-service-configs.ports.ts';

/** A deleted identity loses its service config overrides (auth's `identity.deleted`; idempotent). */
export function identityEventSubscription(
  overrides: Pick<IdentityServiceConfigService, 'applyIdentityDeleted'>,
  stores: (tx: Db, events: EventSink) => OverrideStores,
  logger: Logger,
): EventSubscription {
  return {
    source: 'auth',
    handlers: [
      on(
        eventTypes.identityDeleted,
        async (tx, { id }, _event, events) => {
          const removed = await overrides.applyIdentityDeleted(stores(tx, events), id);
          if (removed > 0)
            logger.info({ identityId: id, removed }, 'removed the service configs of a deleted identity');
        },
        { read: identityState.pick({ id: true }) },
      ),
    ],
  };
}
