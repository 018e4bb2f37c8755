import type { AuthCore } from '../shared/core.wiring.ts';
import { ControllerService } from './controllers.domain.ts';
import { PgControllerQuery } from './controllers.store.ts';

/** The `/controllers` record: this controller's certificate chain and the address clients use. */
export const controllersWiring = (core: AuthCore, advertisedAddress?: string) =>
  new ControllerService(
    async () => (await core.pki.serverIdentity()).certChainPem,
    new PgControllerQuery(core.database.db),
    advertisedAddress ?? 'localhost:1280',
  );
