import type { InventoryCore } from '../shared/core.wiring.ts';
import { BusRouterEnrollments } from './router-enrollments.adapter.ts';
import { RouterService } from './routers.domain.ts';
import type { RouterEnrollments } from './routers.ports.ts';

/** Edge and transit routers, their enrollments made by pki-enrollment (over the bus unless given). */
export const routersWiring = (core: InventoryCore, enrollments?: RouterEnrollments) =>
  new RouterService(core.work, enrollments ?? new BusRouterEnrollments(core.bus));
