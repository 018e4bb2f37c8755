import { authCallContracts, inventoryCallContracts } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { RelatedEntityDetails } from './relations.ports.ts';

/**
 * The owners' details of related entities, asked over the bus: auth's `identityDetails`,
 * inventory's `edgeRouterDetails`. An owner down or too slow is the API's 503 (`callService`).
 */
export class BusRelatedEntityDetails implements RelatedEntityDetails {
  constructor(private readonly bus: Bus) {}

  async identities(ids: string[]) {
    return (await callService(this.bus, 'auth', authCallContracts.identityDetails, { ids })).details;
  }

  async edgeRouters(ids: string[]) {
    return (await callService(this.bus, 'inventory', inventoryCallContracts.edgeRouterDetails, { ids })).details;
  }
}
