import { type AdmittableRouter, type RouterPresenceReport, fabricCallContracts } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { RouterRegistry } from './routers.ports.ts';

/** inventory over the bus. */
export class BusRouterRegistry implements RouterRegistry {
  constructor(private readonly bus: Bus) {}

  async admission(routerId: string): Promise<AdmittableRouter | null> {
    return (await callService(this.bus, 'inventory', fabricCallContracts.routerAdmission, { routerId })).router;
  }

  async reportPresence(report: RouterPresenceReport): Promise<boolean> {
    return (await callService(this.bus, 'inventory', fabricCallContracts.reportRouterPresence, report)).applied;
  }

  async renewLeases(replicaId: string, connections: { routerId: string; connectionId: string }[], leaseMs: number) {
    if (connections.length === 0) return [];
    const reply = await callService(this.bus, 'inventory', fabricCallContracts.renewRouterLeases, {
      replicaId,
      connections,
      leaseMs,
    });
    return reply.stale;
  }
}
