import type { ApiSessionStore, Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { maintenanceCalls } from './bus/maintenance.ts';
import { OutboxRelay, createServiceRuntime, createUnitOfWork, readMigrations } from '@ziti/platform';
import { Argon2PasswordHasher } from './adapters/argon2-password-hasher.ts';
import { authCalls } from './bus/calls.ts';
import { authOperations } from './bus/operations.ts';
import { AuthenticationService } from './domain/authentication-service.ts';
import { AuthenticatorService } from './domain/authenticator-service.ts';
import { type AdminSeed, seedAuthData } from './domain/bootstrap.ts';
import { IdentityService } from './domain/identity-service.ts';
import type { AuthStores } from './domain/ports.ts';
import { PgApiSessionQuery } from './store/pg-api-session-query.ts';
import { PgAuthPolicyStore, PgAuthenticatorStore, PgIdentityStore, PgIdentityTypeStore } from './store/pg-stores.ts';

export interface AuthConfig {
  sessionTimeoutSeconds: number;
  admin?: AdminSeed;
  hashConcurrency?: number;
}

export interface AuthServiceDeps {
  config: AuthConfig;
  database: Database;
  bus: Bus;
  sessions: ApiSessionStore;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** Composition root of the auth service: stores, domain, bus endpoints. */
export function createAuthService(deps: AuthServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'auth', deps.logger);
  const work = createUnitOfWork<AuthStores>(deps.database, relay, 'auth', (tx, events) => ({
    identities: new PgIdentityStore(tx),
    authenticators: new PgAuthenticatorStore(tx),
    authPolicies: new PgAuthPolicyStore(tx),
    identityTypes: new PgIdentityTypeStore(tx),
    events,
  }));
  const hasher = new Argon2PasswordHasher(deps.config.hashConcurrency ?? 4);
  const ttl = deps.config.sessionTimeoutSeconds;
  const identities = new IdentityService(work, deps.sessions, ttl);
  const authenticators = new AuthenticatorService(work, hasher);
  const authentication = new AuthenticationService(work, deps.sessions, hasher, new PgApiSessionQuery(deps.database.db), ttl);
  return createServiceRuntime({
    owner: 'auth',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    operations: authOperations({ identities, authenticators, authentication, work }),
    calls: { ...authCalls({ work }), ...maintenanceCalls(deps.database) },
    onStart: async () => {
      const outcome = await seedAuthData(work, hasher, deps.config.admin);
      if (outcome === 'created') deps.logger.info({ username: deps.config.admin?.username }, 'default admin created');
    },
    onStop: () => deps.sessions.close(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
