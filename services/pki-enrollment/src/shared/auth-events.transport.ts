import { eventTypes, identityState } from '@ziti/contracts';
import type { Db, EventSink, EventSubscription } from '@ziti/platform';
import { on } from '@ziti/platform';
import { z } from 'zod';
import type { AuthEventEffects, AuthEventStores } from './auth-event-effects.domain.ts';

const apiSessionRef = z.object({ id: z.string(), identityId: z.string() });

/**
 * What pki-enrollment follows of auth: an API session that ends (logout, removal, expiry) takes its
 * certificates with it; a deleted identity takes its enrollments and API-session certificates.
 */
export function authEventSubscription(
  effects: Pick<AuthEventEffects, 'apiSessionEnded' | 'identityDeleted'>,
  stores: (tx: Db, events: EventSink) => AuthEventStores,
): EventSubscription {
  return {
    source: 'auth',
    handlers: [
      // Only the session's id is read, which every version carries.
      ...[eventTypes.apiSessionDeleted, eventTypes.apiSessionExpired].map((def) =>
        on(def, (tx, session, _event, events) => effects.apiSessionEnded(stores(tx, events), session.id), {
          versions: [1, 2],
          read: apiSessionRef,
        }),
      ),
      // The enrollments' deletions are published with this consumer's commit (enrollment.deleted).
      on(eventTypes.identityDeleted, (tx, { id }, _event, events) => effects.identityDeleted(stores(tx, events), id), {
        read: identityState.pick({ id: true }),
      }),
    ],
  };
}
