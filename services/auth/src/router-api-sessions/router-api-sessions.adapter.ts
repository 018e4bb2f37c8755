import { type ApiSessionSignal, signalSubjects } from '@ziti/contracts';
import type { Bus, Logger } from '@ziti/platform';
import type { RouterApiSessions } from './router-api-sessions.domain.ts';
import type { ApiSessionNotices } from './router-api-sessions.ports.ts';

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
