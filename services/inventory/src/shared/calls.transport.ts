import { inventoryCallContracts } from '@ziti/contracts';
import { type CallHandler, type CallTable, callHandlers } from '@ziti/platform';
import type { RouterService } from '../routers/routers.domain.ts';
import { routerCalls } from '../routers/routers.transport.ts';
import type { ServiceCatalog } from '../services/services.domain.ts';
import type { TerminatorService } from '../terminators/terminators.domain.ts';
import { terminatorCalls } from '../terminators/terminators.transport.ts';

type Contracts = typeof inventoryCallContracts;

/** A handler for each call inventory serves; each resource's transport serves its part. */
export type InventoryCallHandlers = { [K in keyof Contracts]: CallHandler<Contracts[K]> };

/**
 * Calls inventory serves on `ziti.rpc.inventory.call.<action>`: for policy, a service's terminators
 * as the client API shows them (terminators/terminators.transport.ts); for pki-enrollment, which
 * enrolls routers and extends their certificates (routers/routers.transport.ts). Contracts in
 * packages/contracts/src/service-calls.ts.
 */
export function inventoryCalls(
  routers: RouterService,
  terminators: TerminatorService,
  services: ServiceCatalog,
): CallTable {
  return callHandlers(inventoryCallContracts, {
    ...terminatorCalls(terminators, services),
    ...routerCalls(routers),
  });
}
