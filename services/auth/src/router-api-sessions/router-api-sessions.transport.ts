import { type ApiSessionSignal, fabricCallContracts, signalSubjects } from '@ziti/contracts';
import { type Bus, type CallTable, type Logger, callHandlers } from '@ziti/platform';
import type { RouterApiSessions } from './router-api-sessions.domain.ts';
import type { ApiSessionNotices } from './router-api-sessions.ports.ts';

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

/**
 * Signals an opened API session to the router edge, off the login's path: the fingerprints are
 * read after the login answered (one statement), then broadcast. A signal lost on the way costs a
 * router that session until its next full synchronisation (fabric resynchronises after a gap).
 */
export class BusApiSessionNotices implements ApiSessionNotices {
  constructor(
    private readonly bus: Bus,
    private readonly sessions: RouterApiSessions,
    private readonly logger: Logger,
  ) {}

  opened(session: { id: string; token: string; identityId: string }): void {
    if (!this.bus.signal) return;
    void this.sessions
      .withFingerprints([session])
      .then(([s]) => {
        const signal: ApiSessionSignal = { kind: 'opened', session: s! };
        this.bus.signal!(signalSubjects.apiSessions, signal);
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'an opened API session could not be signalled to routers'));
  }
}
