import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { OutboxRelay, createServiceRuntime, readMigrations } from '@ziti/platform';
import { authOperations } from './bus/operations.ts';

export interface AuthServiceDeps {
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** Composition root of the auth service: stores, domain, bus endpoints and consumers. */
export function createAuthService(deps: AuthServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'auth', deps.logger);
  return createServiceRuntime({
    owner: 'auth',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    operations: authOperations(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
