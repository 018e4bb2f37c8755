import type { EventSink } from '@ziti/platform/event-sink';
import type { ConfigTypeStore } from '../config-types/config-types.ports.ts';
import type { ConfigStore } from '../configs/configs.ports.ts';
import type { IdentityServiceConfigStore } from '../identity-service-configs/identity-service-configs.ports.ts';
import type { RouterPresenceStore } from '../router-presence/router-presence.ports.ts';
import type { RouterStore } from '../routers/routers.ports.ts';
import type { ServiceStore } from '../services/services.ports.ts';
import type { TerminatorStore } from '../terminators/terminators.ports.ts';

export interface SeedStore {
  /** Marks a piece of first-start data as written; false when it already was. */
  claim(name: string): Promise<boolean>;
}

/** The stores of one transaction and the events that leave with it. */
export interface InventoryStores {
  seeds: SeedStore;
  configTypes: ConfigTypeStore;
  configs: ConfigStore;
  services: ServiceStore;
  routers: RouterStore;
  routerPresence: RouterPresenceStore;
  terminators: TerminatorStore;
  identityServiceConfigs: IdentityServiceConfigStore;
  events: EventSink;
}

export type UnitOfWork = <T>(fn: (stores: InventoryStores) => Promise<T>) => Promise<T>;
