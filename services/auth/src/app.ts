import type { ApiSessionStore, Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { createServiceRuntime, positionsReflected, readMigrations } from '@ziti/platform';
import { apiSessionsWiring } from './api-sessions/api-sessions.wiring.ts';
import { AuthPolicyService } from './auth-policies/auth-policies.domain.ts';
import type { AttemptQueueOptions } from './authentication-attempts/authentication-attempts.store.ts';
import { authenticationAttemptsWiring } from './authentication-attempts/authentication-attempts.wiring.ts';
import { AuthenticatorService } from './authenticators/authenticators.domain.ts';
import { controllersWiring } from './controllers/controllers.wiring.ts';
import { credentialsWiring } from './credentials/credentials.wiring.ts';
import { enrollmentsWiring } from './enrollments/enrollments.wiring.ts';
import { ExternalJwtSignerService } from './external-jwt-signers/external-jwt-signers.domain.ts';
import { identitiesWiring } from './identities/identities.wiring.ts';
import { IdentityTraceService } from './identity-traces/identity-traces.domain.ts';
import { IdentityTypeService } from './identity-types/identity-types.domain.ts';
import { maintenanceWiring } from './maintenance/maintenance.wiring.ts';
import { mfasWiring } from './mfas/mfas.wiring.ts';
import { authOperations } from './operations.transport.ts';
import { Argon2PasswordHasher } from './passwords/argon2-password-hasher.adapter.ts';
import { routerApiSessionsWiring } from './router-api-sessions/router-api-sessions.wiring.ts';
import { routerIdentitiesWiring } from './router-identities/router-identities.wiring.ts';
import { type AdminSeed, seedAuthData } from './shared/bootstrap.domain.ts';
import { authCalls } from './shared/calls.transport.ts';
import { authCoreWiring, bindAuthStores } from './shared/core.wiring.ts';
import type { AuthStores } from './shared/stores.ports.ts';

export interface AuthConfig {
  sessionTimeoutSeconds: number;
  admin?: AdminSeed;
  hashConcurrency?: number;
  /** Callers waiting for a hashing slot beyond which logins are refused with 429 (default 256). */
  hashQueueLimit?: number;
  /** The nice value of the password-hash threads (0: normal priority … 19: lowest; default 5). */
  hashNice?: number;
  /** `ZITI_SECRET_KEY`: seals the TOTP secrets and recovery codes at rest. */
  secretKey: string;
  /** `ZITI_SECRET_KEY_PREVIOUS`: keys it replaced, still opened until `rotate-secret-key` re-sealed their values. */
  previousSecretKeys?: string[];
  /** The issuer authenticator apps show for TOTP (`openziti.io`). */
  totpIssuer?: string;
  /** host:port clients use (the `/controllers` record). */
  advertisedAddress?: string;
}

export interface AuthServiceDeps {
  config: AuthConfig;
  database: Database;
  bus: Bus;
  sessions: ApiSessionStore;
  logger: Logger;
  ownsBus?: boolean;
  /** How authentication attempts are batched (docs/adr/0021; tests set it, the defaults otherwise). */
  attemptQueue?: AttemptQueueOptions;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

// What `ziti-edge-ops reset-admin-password` (apps/ops) runs on auth's database, through auth's own
// path: apps import a service only through its entry points (issue 33).
export { AuthenticatorService, Argon2PasswordHasher, bindAuthStores };
export type { AuthStores };
export { passwordLimits } from './passwords/password.domain.ts';
export { isDisabled } from './shared/model.domain.ts';

/**
 * Composition root of the auth service: the shared core (stores, relay, hasher) and each
 * resource's wiring (its `*.wiring.ts`, beside its code), composed into the runtime.
 */
export function createAuthService(deps: AuthServiceDeps): RunnableService {
  const { config, logger } = deps;
  const core = authCoreWiring({
    database: deps.database,
    bus: deps.bus,
    sessions: deps.sessions,
    logger,
    sessionTimeoutSeconds: config.sessionTimeoutSeconds,
    hash: { concurrency: config.hashConcurrency, queueLimit: config.hashQueueLimit, nice: config.hashNice },
  });
  const { work, sessions } = core;
  const enrollments = enrollmentsWiring(core);
  const identities = identitiesWiring(core, enrollments.enrollments);
  const credentials = credentialsWiring(core);
  const attempts = authenticationAttemptsWiring(core, deps.attemptQueue);
  const routerApiSessions = routerApiSessionsWiring(core);
  const apiSessions = apiSessionsWiring(core, { identities, attempts, notices: routerApiSessions.notices });
  const routerIdentities = routerIdentitiesWiring(core);
  return createServiceRuntime({
    owner: 'auth',
    database: core.database,
    bus: core.bus,
    logger,
    migrations,
    relay: core.relay,
    operations: authOperations({
      identities,
      authenticators: new AuthenticatorService(work, core.hasher, sessions, core.pki),
      authentication: apiSessions.authentication,
      identityTypes: new IdentityTypeService(work),
      enrollments: enrollments.enrollments,
      authPolicies: new AuthPolicyService(work, apiSessions.sync),
      signers: new ExternalJwtSignerService(work, apiSessions.sync),
      mfa: mfasWiring(core, { ...config, attempts }),
      traces: new IdentityTraceService(work),
      controllers: controllersWiring(core, config.advertisedAddress),
      // What a `/current-identity` answer reflects: auth's own position and its consumer of
      // pki-enrollment's (the enrollments it shows), read before the answer (docs/adr/0015).
      positionsReflected: () => positionsReflected(core.database.db, 'auth', ['pki-enrollment']),
    }),
    calls: {
      ...authCalls({
        credentials: credentials.credentials,
        authentication: apiSessions.authentication,
        identities,
        enrollments: enrollments.enrollments,
      }),
      ...routerApiSessions.calls,
      ...maintenanceWiring(core, {
        routerIdentities: routerIdentities.integrity,
        outstandingEnrollments: enrollments.integrity,
      }),
    },
    subscriptions: [
      routerIdentities.subscription,
      credentials.subscription,
      // Merged with the one above: one durable consumer of pki-enrollment's events.
      enrollments.subscription,
    ],
    onStart: async () => {
      const outcome = await seedAuthData(work, core.hasher, config.admin);
      if (outcome === 'created') logger.info({ username: config.admin?.username }, 'default admin created');
      apiSessions.sweeper.start();
    },
    // No login is served any more: what is queued goes to the outbox before the relay's last
    // flush, so this replica publishes it.
    onDrained: () => attempts.stop(),
    onStop: async () => {
      await apiSessions.sweeper.stop();
      await sessions.close();
    },
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
