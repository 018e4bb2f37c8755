import { inventoryCallContracts } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { TerminatorCatalog } from './client-terminators.ports.ts';

/** inventory renders the terminators; policy has decided the caller may see the service. */
export class BusTerminatorCatalog implements TerminatorCatalog {
  constructor(private readonly bus: Bus) {}

  forClient(serviceId: string, list: { filter?: string; limit?: string; offset?: string; sort?: string }) {
    return callService(this.bus, 'inventory', inventoryCallContracts.clientServiceTerminators, { serviceId, list });
  }
}
