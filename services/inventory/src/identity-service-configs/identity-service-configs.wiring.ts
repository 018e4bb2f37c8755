import type { InventoryCore } from '../shared/core.wiring.ts';
import type { BusIdentityDirectory } from './identity-directory.adapter.ts';
import { identityEventSubscription } from './identity-events.transport.ts';
import { IdentityServiceConfigService } from './identity-service-configs.domain.ts';
import { PgIdentityServiceConfigStore } from './identity-service-configs.store.ts';

/** An identity's service-config overrides, and what auth's identity events do to them. */
export function identityServiceConfigsWiring(core: InventoryCore, identities: BusIdentityDirectory) {
  const service = new IdentityServiceConfigService(core.work, identities);
  return {
    service,
    subscription: identityEventSubscription(
      service,
      (tx, events) => ({ identityServiceConfigs: new PgIdentityServiceConfigStore(tx), events }),
      core.logger,
    ),
  };
}
