import {
  type ApiSessionStore,
  type Bus,
  type Database,
  type Db,
  type EventSink,
  type Logger,
  OutboxRelay,
  createReader,
  createUnitOfWork,
} from '@ziti/platform';
import { PgAuthPolicyStore } from '../auth-policies/auth-policies.store.ts';
import { PgAuthenticatorStore } from '../authenticators/authenticators.store.ts';
import { PgExternalJwtSignerStore } from '../external-jwt-signers/external-jwt-signers.store.ts';
import { PgIdentityStore } from '../identities/identities.store.ts';
import { PgIdentityTraceStore } from '../identity-traces/identity-traces.store.ts';
import { PgIdentityTypeStore } from '../identity-types/identity-types.store.ts';
import { PgLoginAttemptStore } from '../api-sessions/login-attempts.store.ts';
import { PgMfaStore } from '../mfas/mfas.store.ts';
import { Argon2PasswordHasher } from '../passwords/argon2-password-hasher.adapter.ts';
import { PkiCertificates } from '../api-sessions/pki-certificates.adapter.ts';
import type { AuthStores } from './stores.ports.ts';

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

/**
 * What auth's resources share: the database, the bus and the API-session store; the outbox relay;
 * the unit of work and the reader over `bindAuthStores`; the session lifetime; the password hasher
 * (one pool of hashing threads) and pki-enrollment's certificates.
 */
export function authCoreWiring(d: {
  database: Database;
  bus: Bus;
  sessions: ApiSessionStore;
  logger: Logger;
  sessionTimeoutSeconds: number;
  hash: { concurrency?: number; queueLimit?: number; nice?: number };
}) {
  const relay = new OutboxRelay(d.database, d.bus, 'auth', d.logger);
  return {
    ...d,
    relay,
    work: createUnitOfWork<AuthStores>(d.database, relay, 'auth', bindAuthStores),
    read: createReader<AuthStores>(d.database, bindAuthStores),
    ttl: d.sessionTimeoutSeconds,
    hasher: new Argon2PasswordHasher(d.hash.concurrency ?? 4, d.hash.queueLimit ?? 256, d.hash.nice ?? 5),
    pki: new PkiCertificates(d.bus, d.logger),
  };
}

export type AuthCore = ReturnType<typeof authCoreWiring>;
