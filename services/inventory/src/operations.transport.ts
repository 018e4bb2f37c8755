import type { OperationHandlers } from '@ziti/platform';
import type { ConfigTypeService } from './config-types/config-types.domain.ts';
import { configTypeOperations } from './config-types/config-types.transport.ts';
import type { ConfigService } from './configs/configs.domain.ts';
import { configOperations } from './configs/configs.transport.ts';
import type { IdentityServiceConfigService } from './identity-service-configs/identity-service-configs.domain.ts';
import { identityServiceConfigOperations } from './identity-service-configs/identity-service-configs.transport.ts';
import type { DatabaseMaintenance } from './maintenance/database-maintenance.domain.ts';
import { maintenanceOperations } from './maintenance/maintenance.transport.ts';
import type { RouterPresenceService } from './router-presence/router-presence.domain.ts';
import type { RouterService } from './routers/routers.domain.ts';
import { routerOperations } from './routers/routers.transport.ts';
import type { ServiceCatalog } from './services/services.domain.ts';
import { serviceOperations } from './services/services.transport.ts';
import type { TerminatorService } from './terminators/terminators.domain.ts';
import { terminatorOperations } from './terminators/terminators.transport.ts';

export interface InventoryOperationDeps {
  configTypes: ConfigTypeService;
  configs: ConfigService;
  services: ServiceCatalog;
  routers: RouterService;
  presence: RouterPresenceService;
  terminators: TerminatorService;
  identityServiceConfigs: IdentityServiceConfigService;
  maintenance: DatabaseMaintenance;
}

/**
 * Every operation inventory owns, keyed `<api>.<operationId>`: each resource's transport
 * (`<resource>/<resource>.transport.ts`) serves its slice, and the compiler checks the merged
 * table names each one.
 */
export function inventoryOperations(deps: InventoryOperationDeps): OperationHandlers<'inventory'> {
  return {
    ...configTypeOperations(deps),
    ...configOperations(deps),
    ...serviceOperations(deps),
    ...identityServiceConfigOperations(deps),
    ...routerOperations(deps),
    ...terminatorOperations(deps),
    ...maintenanceOperations(deps),
  };
}
