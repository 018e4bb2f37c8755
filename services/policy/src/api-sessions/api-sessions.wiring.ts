import type { Db, EventHandler } from '@ziti/platform';
import { forgetApiSessionPosture } from '../posture/posture-data.store.ts';
import { apiSessionHandlers } from './api-session-events.transport.ts';
import { ApiSessionLifecycle } from './api-sessions.domain.ts';
import type { ApiSessionRecords } from './api-sessions.ports.ts';
import { PgApiSessions } from './api-sessions.store.ts';

/**
 * What policy does with auth's API-session events (docs/adr/0017): the handlers, each applied in the
 * consumer's transaction to the API-session rows and the posture data of the session.
 */
export function apiSessionsWiring(): EventHandler[] {
  const records = (tx: Db): ApiSessionRecords => {
    const store = new PgApiSessions(tx);
    return {
      started: (x) => store.started(x),
      mfaPassed: (id, identityId, at) => store.mfaPassed(id, identityId, at),
      ended: (id, identityId, at) => store.ended(id, identityId, at),
      forgetPosture: (id) => forgetApiSessionPosture(tx, id),
    };
  };
  return apiSessionHandlers(new ApiSessionLifecycle(), records);
}
