import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { maintenanceCalls } from './bus/maintenance.ts';
import { OutboxRelay, SecretBox, createServiceRuntime, readMigrations } from '@ziti/platform';
import { pkiCalls, pkiOperations } from './bus/operations.ts';
import type { PkiConfig } from './config.ts';
import { ControllerPkiService } from './domain/controller-pki.ts';
import { PgPkiMaterialStore } from './store/pg-pki-material-store.ts';

export interface PkiServiceDeps {
  config: PkiConfig;
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** Composition root of the pki-enrollment service. */
export function createPkiService(deps: PkiServiceDeps): RunnableService {
  const box = new SecretBox(deps.config.secretKey);
  const pki = new ControllerPkiService(new PgPkiMaterialStore(deps.database.db), box, {
    advertisedAddress: deps.config.advertisedAddress,
    serverCertValidityDays: deps.config.serverCertValidityDays,
    ...(deps.config.suppliedSigner ? { suppliedSigner: deps.config.suppliedSigner } : {}),
  });
  const relay = new OutboxRelay(deps.database, deps.bus, 'pki-enrollment', deps.logger);
  return createServiceRuntime({
    owner: 'pki-enrollment',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    operations: pkiOperations(pki),
    calls: { ...pkiCalls(pki), ...maintenanceCalls(deps.database) },
    onStart: () => pki.initialize(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
