import type { PkiCore } from '../shared/core.wiring.ts';
import { ControllerPkiService } from './controller-pki.domain.ts';
import { PgPkiMaterialStore } from './pki-material.store.ts';

/** The controller's PKI (its CAs and server identity), its keys sealed at rest. */
export const controllerPkiWiring = ({ config, database, box }: PkiCore) =>
  new ControllerPkiService(new PgPkiMaterialStore(database.db), box, {
    advertisedAddress: config.advertisedAddress,
    extraNames: config.extraServerNames,
    serverCertValidityDays: config.serverCertValidityDays,
    ...(config.suppliedSigner ? { suppliedSigner: config.suppliedSigner } : {}),
  });
