import type { Logger } from '@ziti/platform/logger';
import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { Circuits } from '../circuits/circuits.domain.ts';
import type { Terminators } from '../terminators/terminators.domain.ts';
import type { RouterSynchronizer } from './router-connections.domain.ts';
import type { RouterLink } from './router-link.ports.ts';

/** What a router's connection and disconnection mean for the edge state it carries. */
export class EdgeState implements RouterSynchronizer {
  constructor(
    private readonly apiSessions: ApiSessionSync,
    private readonly terminators: Terminators,
    private readonly circuits: Circuits,
    /** Whether this link is still the router's current one here (a newer connection keeps its circuits). */
    private readonly isCurrent: (link: RouterLink) => boolean,
    private readonly logger: Logger,
  ) {}

  synchronize(link: RouterLink): Promise<void> {
    return this.apiSessions.fullSync(link);
  }

  validateTerminators(link: RouterLink): Promise<void> {
    return this.terminators.validate(link);
  }

  disconnected(link: RouterLink, handedOver: boolean): void {
    if (handedOver || !this.isCurrent(link)) return;
    void this.circuits
      .routerGone(link.routerId)
      .catch((err: unknown) =>
        this.logger.warn({ err, routerId: link.routerId }, 'circuits of the router not removed'),
      );
  }
}
