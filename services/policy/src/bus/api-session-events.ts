import { type EventDefinition, apiSessionDeletedV1State, apiSessionDeletedState, eventTypes } from '@ziti/contracts';
import type { Db, EventHandler } from '@ziti/platform';
import { parseEventData } from '@ziti/platform';
import type { ApiSessionLifecycle, ApiSessionRecords } from '../domain/sessions.ts';

const handler = (def: EventDefinition, handle: EventHandler['handle'], versions?: number[]): EventHandler => ({
  type: def.type,
  ...(versions ? { versions } : {}),
  handle,
});

/**
 * auth's API-session facts as policy needs them: a start (for MFA posture and to know the session),
 * MFA passed, and every end (`apiSession.deleted` v1 or v2, `apiSession.expired`): the session's
 * edge sessions and posture data go with it.
 */
export function apiSessionHandlers(
  lifecycle: ApiSessionLifecycle,
  records: (tx: Db) => ApiSessionRecords,
): EventHandler[] {
  const t = eventTypes;
  return [
    handler(t.apiSessionCreated, async (tx, event) => {
      const s = parseEventData(t.apiSessionCreated.schema, event);
      await lifecycle.started(records(tx), s);
    }),
    handler(t.apiSessionMfaPassed, async (tx, event) => {
      const s = parseEventData(t.apiSessionMfaPassed.schema, event);
      await lifecycle.mfaPassed(records(tx), s.id, s.identityId, s.passedAt);
    }),
    handler(
      t.apiSessionDeleted,
      async (tx, event) => {
        const s =
          event.version === 1
            ? { ...parseEventData(apiSessionDeletedV1State, event), endedAt: event.occurredAt }
            : parseEventData(apiSessionDeletedState, event);
        await lifecycle.ended(records(tx), s.id, s.identityId, s.endedAt);
      },
      [1, 2],
    ),
    handler(t.apiSessionExpired, async (tx, event) => {
      const s = parseEventData(t.apiSessionExpired.schema, event);
      await lifecycle.ended(records(tx), s.id, s.identityId, s.endedAt);
    }),
  ];
}
