import { eventTypes, identityState, subjects } from '@ziti/contracts';
import type { EventSubscription, Logger } from '@ziti/platform';
import type { IdentityReadModel } from '../domain/ports.ts';

const deletedType = eventTypes.identityDeleted.type;

/** Keeps the identity read model from auth's identity.* events (at-least-once, any order). */
export function identityEventSubscription(model: (tx: import('@ziti/platform').Db) => IdentityReadModel, logger: Logger): EventSubscription {
  return {
    subject: `${subjects.event('auth', 'identity')}.>`,
    durable: 'policy-identities',
    handle: async (tx, event) => {
      const parsed = identityState.safeParse(event.data);
      if (!parsed.success) {
        logger.error({ eventId: event.id, type: event.type }, 'identity event with an unknown shape; skipped');
        return;
      }
      await model(tx).apply(parsed.data, event.sequence, event.type === deletedType);
    },
  };
}
