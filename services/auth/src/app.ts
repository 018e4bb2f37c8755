import type { ApiSessionStore, Bus, Database, Db, EventSink, Logger, RunnableService } from '@ziti/platform';
import { caEventSubscription } from './credentials/ca-events.transport.ts';
import { enrollmentReadModelSubscription } from './enrollments/enrollment-events.transport.ts';
import { BusServiceExistence } from './identities/inventory-services.adapter.ts';
import { BusEnrollmentPort } from './enrollments/pki-client.adapter.ts';
import { CredentialService, type CredentialStores } from './credentials/credentials.domain.ts';
import { PgCredentialStore } from './credentials/credentials.store.ts';
import { pgMaintenance } from './maintenance/maintenance.store.ts';
import { maintenanceCalls } from './maintenance/maintenance.transport.ts';
import { routerIdentityEventSubscription } from './router-identities/router-identity-events.transport.ts';
import { RouterIdentities } from './router-identities/router-identities.domain.ts';
import { RouterIdentityIntegrity } from './router-identities/router-identity-integrity.domain.ts';
import { AuthMaintenance } from './maintenance/auth-maintenance.domain.ts';
import { OutstandingEnrollmentIntegrity } from './enrollments/outstanding-enrollments.domain.ts';
import { PgRouterEventPositions } from './router-identities/router-event-positions.store.ts';
import {
  OutboxRelay,
  createReader,
  createServiceRuntime,
  createUnitOfWork,
  ownerEntityStates,
  positionsReflected,
  readMigrations,
} from '@ziti/platform';
import { Argon2PasswordHasher } from './passwords/argon2-password-hasher.adapter.ts';
import { authCalls } from './shared/calls.transport.ts';
import { RouterApiSessions } from './router-api-sessions/router-api-sessions.domain.ts';
import { PgCertificateFingerprints } from './router-api-sessions/router-api-sessions.store.ts';
import { BusApiSessionNotices } from './router-api-sessions/router-api-sessions.adapter.ts';
import { routerApiSessionCalls } from './router-api-sessions/router-api-sessions.transport.ts';
import { authOperations } from './operations.transport.ts';
import { AuthenticationService } from './api-sessions/authentication.domain.ts';
import { BusConfigTypeResolver } from './api-sessions/config-types.adapter.ts';
import { AuthenticatorService } from './authenticators/authenticators.domain.ts';
import { type AdminSeed, seedAuthData } from './shared/bootstrap.domain.ts';
import { IdentityService } from './identities/identities.domain.ts';
import { IdentityTypeService } from './identity-types/identity-types.domain.ts';
import type { AuthStores } from './shared/stores.ports.ts';
import { PgApiSessionQuery } from './api-sessions/api-sessions.store.ts';
import { PgAuthenticatorStore } from './authenticators/authenticators.store.ts';
import { PgIdentityStore } from './identities/identities.store.ts';
import { PgIdentityTypeStore } from './identity-types/identity-types.store.ts';
import { SecretBox } from '@ziti/platform';
import { verifyChain } from '@ziti/x509';
import { JoseSignerKeys } from './external-jwt-signers/jose-signer-keys.adapter.ts';
import { OtplibTotp, PngQrCodes } from './mfas/otplib-totp.adapter.ts';
import { PkiCertificates } from './api-sessions/pki-certificates.adapter.ts';
import { AuthPolicyService } from './auth-policies/auth-policies.domain.ts';
import { ControllerService } from './controllers/controllers.domain.ts';
import { ExternalJwtSignerService } from './external-jwt-signers/external-jwt-signers.domain.ts';
import { IdentityTraceService } from './identity-traces/identity-traces.domain.ts';
import { MfaService } from './mfas/mfas.domain.ts';
import { SessionFactorSync } from './api-sessions/session-factors.domain.ts';
import { ApiSessionSweeper } from './api-sessions/sweeper.domain.ts';
import { PgAuthPolicyStore } from './auth-policies/auth-policies.store.ts';
import { PgExternalJwtSignerStore } from './external-jwt-signers/external-jwt-signers.store.ts';
import { PgIdentityTraceStore } from './identity-traces/identity-traces.store.ts';
import { PgLoginAttemptStore } from './api-sessions/login-attempts.store.ts';
import { PgMfaStore } from './mfas/mfas.store.ts';
import { PgControllerQuery } from './controllers/controllers.store.ts';
import { PgOutstandingEnrollments } from './enrollments/outstanding-enrollments.store.ts';
import {
  type AttemptQueueOptions,
  BatchedAuthenticationAttempts,
  outboxAttemptWriter,
} from './authentication-attempts/authentication-attempts.store.ts';

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
export { AuthenticatorService, Argon2PasswordHasher };
export type { AuthStores };
export { passwordLimits } from './passwords/password.domain.ts';
export { isDisabled } from './shared/model.domain.ts';

/** The stores of one transaction (also used by tests, so they run on the same binding). */
export function bindAuthStores(tx: Db, events: EventSink): AuthStores {
  return {
    identities: new PgIdentityStore(tx),
    authenticators: new PgAuthenticatorStore(tx),
    authPolicies: new PgAuthPolicyStore(tx),
    identityTypes: new PgIdentityTypeStore(tx),
    extJwtSigners: new PgExternalJwtSignerStore(tx),
    mfa: new PgMfaStore(tx),
    loginAttempts: new PgLoginAttemptStore(tx),
    traces: new PgIdentityTraceStore(tx),
    events,
  };
}

/** Composition root of the auth service: stores, domain, bus endpoints. */
export function createAuthService(deps: AuthServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'auth', deps.logger);
  const bindStores = bindAuthStores;
  const work = createUnitOfWork<AuthStores>(deps.database, relay, 'auth', bindStores);
  const read = createReader<AuthStores>(deps.database, bindStores);
  // Enrollment's credentials also touch the certificate columns of authenticators.
  const credentialWork = createUnitOfWork<CredentialStores>(deps.database, relay, 'auth', (tx, events) => ({
    ...bindStores(tx, events),
    credentials: new PgCredentialStore(tx),
  }));
  const enrollments = new BusEnrollmentPort(deps.bus);
  const hasher = new Argon2PasswordHasher(
    deps.config.hashConcurrency ?? 4,
    deps.config.hashQueueLimit ?? 256,
    deps.config.hashNice ?? 5,
  );
  const ttl = deps.config.sessionTimeoutSeconds;
  const identities = new IdentityService(
    work,
    deps.sessions,
    ttl,
    undefined,
    enrollments,
    read,
    new BusServiceExistence(deps.bus),
  );
  const credentials = new CredentialService(credentialWork, hasher, deps.sessions);
  const pki = new PkiCertificates(deps.bus, deps.logger);
  const authenticators = new AuthenticatorService(work, hasher, deps.sessions, pki);
  const sync = new SessionFactorSync(work, deps.sessions, ttl);
  // Every login and MFA check is reported as `authentication.attempted`, queued in memory and
  // written to the outbox in batches: no write on the login's path (docs/adr/0021).
  const attempts = new BatchedAuthenticationAttempts(
    outboxAttemptWriter(deps.database, relay),
    deps.logger,
    deps.attemptQueue,
  );
  // What edge routers are told of API sessions (docs/adr/0023).
  const routerApiSessions = new RouterApiSessions(deps.sessions, new PgCertificateFingerprints(deps.database.db), ttl);
  const authentication = new AuthenticationService({
    work,
    read,
    sessions: deps.sessions,
    hasher,
    sessionQuery: new PgApiSessionQuery(deps.database.db),
    sessionTtlSeconds: ttl,
    signerKeys: new JoseSignerKeys(),
    certificates: pki,
    verifyChain: (leaf, intermediates, roots, options) => verifyChain(leaf, intermediates, roots, options),
    lockout: (identityId, minutes) => identities.disable(identityId, minutes),
    onRefused: (reason, detail) => deps.logger.info({ reason, ...detail }, 'authentication refused'),
    attempts,
    notices: new BusApiSessionNotices(deps.bus, routerApiSessions, deps.logger),
    configTypes: new BusConfigTypeResolver(deps.bus),
    onConfigTypesUnresolved: (err, detail) =>
      deps.logger.warn({ err, ...detail }, 'login configTypes kept as sent: inventory did not resolve them'),
  });
  const authPolicies = new AuthPolicyService(work, sync);
  const signers = new ExternalJwtSignerService(work, sync);
  const mfa = new MfaService(
    work,
    deps.sessions,
    new OtplibTotp(),
    new PngQrCodes(),
    new SecretBox(deps.config.secretKey, { previousSecrets: deps.config.previousSecretKeys ?? [] }),
    {
      issuer: deps.config.totpIssuer ?? 'openziti.io',
      sessionTtlSeconds: ttl,
      attempts,
    },
  );
  const traces = new IdentityTraceService(work);
  // API-session expiry and the end of timed disables become events (every 5 s, any number of replicas).
  const sweeper = new ApiSessionSweeper(work, deps.sessions, {
    onError: (err) => deps.logger.warn({ err }, 'sweep failed; will retry'),
  });
  const controllers = new ControllerService(
    async () => (await pki.serverIdentity()).certChainPem,
    new PgControllerQuery(deps.database.db),
    deps.config.advertisedAddress ?? 'localhost:1280',
  );
  // Router identities follow inventory's edge routers (events, and the integrity check's repairs).
  const routerIdentities = new RouterIdentities(deps.sessions);
  const routerIdentityStores = (tx: Db, events: EventSink) => ({ identities: new PgIdentityStore(tx), events });
  return createServiceRuntime({
    owner: 'auth',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    operations: authOperations({
      identities,
      authenticators,
      authentication,
      identityTypes: new IdentityTypeService(work),
      enrollments,
      authPolicies,
      signers,
      mfa,
      traces,
      controllers,
      // What a `/current-identity` answer reflects: auth's own position and its consumer of
      // pki-enrollment's (the enrollments it shows), read before the answer (docs/adr/0015).
      positionsReflected: () => positionsReflected(deps.database.db, 'auth', ['pki-enrollment']),
    }),
    calls: {
      ...authCalls({ credentials, authentication, identities, enrollments }),
      ...routerApiSessionCalls(routerApiSessions),
      ...maintenanceCalls(
        pgMaintenance(
          deps.database,
          new AuthMaintenance<Db>({
            identities: (tx) => new PgIdentityStore(tx),
            sessions: deps.sessions,
            routerIdentities: new RouterIdentityIntegrity(
              {
                edgeRouterPages: () => ownerEntityStates(deps.bus, 'inventory', 'edgeRouter'),
                read: (fn) => deps.database.transaction((tx) => fn(new PgIdentityStore(tx))),
                // No relay kick, as before: the relay hears the outbox's NOTIFY (or polls) for a fix's events.
                work: createUnitOfWork(deps.database, undefined, 'auth', routerIdentityStores),
              },
              routerIdentities,
            ),
            outstandingEnrollments: new OutstandingEnrollmentIntegrity({
              ownerPages: () => ownerEntityStates(deps.bus, 'pki-enrollment', 'enrollment'),
              rows: new PgOutstandingEnrollments(deps.database.db),
              transaction: (fn) => deps.database.transaction((tx) => fn(new PgOutstandingEnrollments(tx))),
            }),
          }),
        ),
      ),
    },
    subscriptions: [
      routerIdentityEventSubscription(
        routerIdentities,
        (tx, events) => ({ ...routerIdentityStores(tx, events), positions: new PgRouterEventPositions(tx) }),
        deps.logger,
      ),
      caEventSubscription(credentials, (tx) => new PgCredentialStore(tx), deps.logger),
      // Merged with the one above: one durable consumer of pki-enrollment's events.
      enrollmentReadModelSubscription((tx) => new PgOutstandingEnrollments(tx), deps.logger),
    ],
    onStart: async () => {
      const outcome = await seedAuthData(work, hasher, deps.config.admin);
      if (outcome === 'created') deps.logger.info({ username: deps.config.admin?.username }, 'default admin created');
      sweeper.start();
    },
    // No login is served any more: what is queued goes to the outbox before the relay's last
    // flush, so this replica publishes it.
    onDrained: () => attempts.stop(),
    onStop: async () => {
      await sweeper.stop();
      await deps.sessions.close();
    },
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
