import type { InventoryCore } from '../shared/core.wiring.ts';
import { RouterPresenceSweeper } from './router-presence-sweeper.domain.ts';
import { RouterPresenceService } from './router-presence.domain.ts';

/**
 * Router presence, which fabric reports, and the sweeper that turns presences whose lease lapsed
 * (their fabric replica died) offline: every 2 s, any number of replicas.
 */
export const routerPresenceWiring = (core: InventoryCore) => ({
  presence: new RouterPresenceService(core.work, core.reader),
  sweeper: new RouterPresenceSweeper(core.work, {
    onError: (err) => core.logger.warn({ err }, 'router presence sweep failed; will retry'),
  }),
});
