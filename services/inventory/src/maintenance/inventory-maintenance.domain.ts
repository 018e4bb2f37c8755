import type {
  ConfigState,
  ConfigTypeState,
  EdgeRouterState,
  EntityStatesRequest,
  IdentityServiceConfigsState,
  IntegrityResult,
  RouterPresenceState,
  ServiceState,
} from '@ziti/contracts';
import { configTypeState } from '../config-types/config-types.domain.ts';
import type { SchemaValidator } from '../config-types/config-types.ports.ts';
import { configState } from '../configs/configs.domain.ts';
import { identityServiceConfigsState } from '../identity-service-configs/identity-service-configs.domain.ts';
import type { IdentityDirectory } from '../identity-service-configs/identity-service-configs.ports.ts';
import { routerPresenceState } from '../router-presence/router-presence.domain.ts';
import { edgeRouterState } from '../routers/routers.domain.ts';
import { serviceState } from '../services/services.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';
import { checkInventoryIntegrity } from './inventory-integrity.domain.ts';

/** The stores the entity-state pages read. */
export type EntityStateStores = Pick<
  InventoryStores,
  'services' | 'routers' | 'routerPresence' | 'configs' | 'configTypes' | 'identityServiceConfigs'
>;

/** What inventory's maintenance calls read; `Tx` is a transaction the caller opened, opaque here. */
export interface InventoryMaintenancePorts<Tx> {
  work: UnitOfWork;
  /** The stores bound to `tx` (entity states are read in the platform's snapshot, at its event position). */
  read: (tx: Tx) => EntityStateStores;
  schemas: SchemaValidator;
  identities: IdentityDirectory;
}

/**
 * What inventory's service-wide maintenance calls answer besides the platform's own: its integrity
 * check and fix (`checkInventoryIntegrity`), and the states of the entities it owns, page by page in
 * bytewise id order (or the given ids), as their events carry them (docs/adr/0008).
 */
export class InventoryMaintenance<Tx> {
  constructor(private readonly ports: InventoryMaintenancePorts<Tx>) {}

  check(fix: boolean): Promise<IntegrityResult[]> {
    return checkInventoryIntegrity(this.ports.work, this.ports.schemas, this.ports.identities, fix);
  }

  async serviceStates(r: EntityStatesRequest, tx: Tx): Promise<ServiceState[]> {
    return (await this.ports.read(tx).services.page(r.after, r.limit ?? 500, r.ids)).map(serviceState);
  }

  async edgeRouterStates(r: EntityStatesRequest, tx: Tx): Promise<EdgeRouterState[]> {
    return (await this.ports.read(tx).routers.page('edge', r.after, r.limit ?? 500, r.ids)).map(edgeRouterState);
  }

  /** One state per router that ever connected (one that never did has none: it shows as never connected). */
  async routerPresenceStates(r: EntityStatesRequest, tx: Tx): Promise<RouterPresenceState[]> {
    return (await this.ports.read(tx).routerPresence.page(r.after, r.limit ?? 500, r.ids)).map(routerPresenceState);
  }

  async configStates(r: EntityStatesRequest, tx: Tx): Promise<ConfigState[]> {
    return (await this.ports.read(tx).configs.page(r.after, r.limit ?? 500, r.ids)).map(configState);
  }

  async configTypeStates(r: EntityStatesRequest, tx: Tx): Promise<ConfigTypeState[]> {
    return (await this.ports.read(tx).configTypes.page(r.after, r.limit ?? 500, r.ids)).map(configTypeState);
  }

  /** One state per identity that has overrides (one without any is absent: its list is empty). */
  async identityServiceConfigsStates(r: EntityStatesRequest, tx: Tx): Promise<IdentityServiceConfigsState[]> {
    const store = this.ports.read(tx).identityServiceConfigs;
    const ids = await store.identityIds(r.after, r.limit ?? 500, r.ids);
    const links = await store.listByIdentities(ids);
    return ids.map((id) =>
      identityServiceConfigsState(
        id,
        links.filter((l) => l.identityId === id),
      ),
    );
  }
}
