import { type CallContract, fabricCallContracts, inventoryCallContracts } from '@ziti/contracts';
import { type CallHandler, type CallTable, callHandlers } from '@ziti/platform';
import type { ConfigTypeService } from '../config-types/config-types.domain.ts';
import { configTypeCalls } from '../config-types/config-types.transport.ts';
import type { RouterPresenceService } from '../router-presence/router-presence.domain.ts';
import { routerPresenceCalls } from '../router-presence/router-presence.transport.ts';
import type { RouterService } from '../routers/routers.domain.ts';
import { routerCalls } from '../routers/routers.transport.ts';
import type { ServiceCatalog } from '../services/services.domain.ts';
import { serviceCalls } from '../services/services.transport.ts';
import type { TerminatorService } from '../terminators/terminators.domain.ts';
import { terminatorCalls, terminatorFabricCalls } from '../terminators/terminators.transport.ts';

type Contracts = typeof inventoryCallContracts;

/** A handler for each call inventory serves; each resource's transport serves its part. */
export type InventoryCallHandlers = { [K in keyof Contracts]: CallHandler<Contracts[K]> };

type Fabric = typeof fabricCallContracts;
/** The calls of the router edge that inventory serves (`servedBy` names it). */
type InventoryFabric = {
  [K in keyof Fabric as 'inventory' extends Fabric[K]['servedBy'][number] ? K : never]: Fabric[K];
};

/** The router edge's calls inventory serves: every one of `fabricCallContracts` whose `servedBy` names it. */
export const inventoryFabricCallContracts = Object.fromEntries(
  Object.entries(fabricCallContracts).filter(([, c]) => (c as CallContract).servedBy.includes('inventory')),
) as InventoryFabric;

/** A handler for each router-edge call inventory serves. */
export type InventoryFabricCallHandlers = { [K in keyof InventoryFabric]: CallHandler<InventoryFabric[K]> };

/**
 * Calls inventory serves on `ziti.rpc.inventory.call.<action>`: for policy, a service's terminators
 * as the client API shows them (terminators/terminators.transport.ts) and edge routers as their
 * detail shows them (routers/routers.transport.ts); for pki-enrollment, which
 * enrolls routers and extends their certificates (routers/routers.transport.ts); for auth, which
 * services exist (services/services.transport.ts) and the config-type ids a login's `configTypes`
 * name (config-types/config-types.transport.ts); for the router edge
 * (fabric, docs/adr/0023), routers' admission and presence (router-presence/router-presence.transport.ts)
 * and the terminators routers make and dials use. Contracts in packages/contracts/src/service-calls.ts.
 */
export function inventoryCalls(
  routers: RouterService,
  terminators: TerminatorService,
  services: ServiceCatalog,
  presence: RouterPresenceService,
  configTypes: ConfigTypeService,
): CallTable {
  return {
    ...callHandlers(inventoryCallContracts, {
      ...terminatorCalls(terminators, services),
      ...routerCalls(routers, presence),
      ...serviceCalls(services),
      ...configTypeCalls(configTypes),
    }),
    ...callHandlers(inventoryFabricCallContracts, {
      ...routerPresenceCalls(presence, routers),
      ...terminatorFabricCalls(terminators),
    }),
  };
}
