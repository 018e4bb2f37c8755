import { inventoryCallContracts, maintenanceCallContracts } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { RouterDirectory, RouterKind } from './router-enrollments.domain.ts';

/** inventory, the owner of routers, over the bus; when it does not answer: 503, as at the gateway. */
export class BusRouterDirectory implements RouterDirectory {
  constructor(private readonly bus: Bus) {}

  async enrolled(input: { routerId: string; kind: RouterKind; fingerprint: string; certPem: string }): Promise<void> {
    await callService(this.bus, 'inventory', inventoryCallContracts.routerEnrolled, input);
  }

  async byFingerprint(fingerprint: string) {
    return (await callService(this.bus, 'inventory', inventoryCallContracts.routerByFingerprint, { fingerprint }))
      .router;
  }

  async certificateChanged(input: {
    routerId: string;
    previousFingerprint: string;
    fingerprint: string;
    certPem: string;
  }): Promise<void> {
    await callService(this.bus, 'inventory', inventoryCallContracts.routerCertificateChanged, input);
  }

  async existingEdgeRouters(ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const { states } = await callService(this.bus, 'inventory', maintenanceCallContracts.entityStates, {
        type: 'edgeRouter',
        ids: ids.slice(i, i + 500),
      });
      for (const s of states) found.add(String(s.id));
    }
    return found;
  }
}
