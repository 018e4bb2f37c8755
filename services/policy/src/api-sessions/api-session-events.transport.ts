import { apiSessionDeletedV1State, eventTypes } from '@ziti/contracts';
import type { Db, EventHandler } from '@ziti/platform';
import { on } from '@ziti/platform';
import { z } from 'zod';
import type { ApiSessionLifecycle } from './api-sessions.domain.ts';
import type { ApiSessionRecords } from './api-sessions.ports.ts';

/** `apiSession.deleted` as this consumer reads it: v1 (`{id, identityId}`) or v2, whose `endedAt` it uses. */
const apiSessionEnd = apiSessionDeletedV1State.extend({ endedAt: z.string().optional() });

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
    on(t.apiSessionCreated, (tx, s) => lifecycle.started(records(tx), s)),
    on(t.apiSessionMfaPassed, (tx, s) => lifecycle.mfaPassed(records(tx), s.id, s.identityId, s.passedAt)),
    on(
      t.apiSessionDeleted,
      // A v1 event carries no end time: the time it was written is when the session ended.
      (tx, s, event) => lifecycle.ended(records(tx), s.id, s.identityId, s.endedAt ?? event.occurredAt),
      { versions: [1, 2], read: apiSessionEnd },
    ),
    on(t.apiSessionExpired, (tx, s) => lifecycle.ended(records(tx), s.id, s.identityId, s.endedAt)),
  ];
}
