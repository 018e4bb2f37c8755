import { fabricCallContracts } from '@ziti/contracts';
import { type CallTable, callHandlers } from '@ziti/platform';
import type { RouterApiSessions } from './router-api-sessions.domain.ts';

/** The calls auth serves the router edge: API sessions in pages, by identity, and kept alive. */
export function routerApiSessionCalls(sessions: RouterApiSessions): CallTable {
  const { routerApiSessions, routerApiSessionsOf, touchApiSessions } = fabricCallContracts;
  return callHandlers(
    { routerApiSessions, routerApiSessionsOf, touchApiSessions },
    {
      routerApiSessions: ({ cursor, limit }) => sessions.page(cursor, limit),
      routerApiSessionsOf: async ({ identityIds }) => ({ sessions: await sessions.of(identityIds) }),
      touchApiSessions: async ({ tokens }) => ({ gone: await sessions.touch(tokens) }),
    },
  );
}
