import type { RouterService } from '../routers/routers.domain.ts';
import type { InventoryFabricCallHandlers } from '../shared/calls.transport.ts';
import type { RouterPresenceService } from './router-presence.domain.ts';
import { admittableRouter } from './router-presence.mapper.ts';

/**
 * The calls fabric makes about routers (docs/adr/0023): the router a connecting certificate names,
 * a connection's presence changed, a replica still holds its connections.
 */
export function routerPresenceCalls(presence: RouterPresenceService, routers: RouterService) {
  return {
    routerAdmission: async ({ routerId }) => {
      const router = await routers.find(routerId);
      return { router: router ? admittableRouter(router) : null };
    },
    reportRouterPresence: (report) => presence.report(report),
    renewRouterLeases: async ({ connections, leaseMs }) => ({
      stale: await presence.renewLeases(connections, leaseMs),
    }),
  } satisfies Partial<InventoryFabricCallHandlers>;
}
