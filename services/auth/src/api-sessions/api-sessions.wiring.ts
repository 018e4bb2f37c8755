import { verifyChain } from '@ziti/x509';
import type { BatchedAuthenticationAttempts } from '../authentication-attempts/authentication-attempts.store.ts';
import { JoseSignerKeys } from '../external-jwt-signers/jose-signer-keys.adapter.ts';
import type { IdentityService } from '../identities/identities.domain.ts';
import type { AuthCore } from '../shared/core.wiring.ts';
import type { ApiSessionNotices } from '../router-api-sessions/router-api-sessions.ports.ts';
import { PgApiSessionQuery } from './api-sessions.store.ts';
import { AuthenticationService } from './authentication.domain.ts';
import { BusConfigTypeResolver } from './config-types.adapter.ts';
import { SessionFactorSync } from './session-factors.domain.ts';
import { ApiSessionSweeper } from './sweeper.domain.ts';

/**
 * API sessions: logins by every method (`AuthenticationService`), the factors of live sessions kept
 * in step with their policies (`SessionFactorSync`), and the sweeper that turns expiries and the
 * end of timed disables into events (every 5 s, any number of replicas).
 */
export function apiSessionsWiring(
  core: AuthCore,
  d: { identities: IdentityService; attempts: BatchedAuthenticationAttempts; notices: ApiSessionNotices },
) {
  const { logger } = core;
  const authentication = new AuthenticationService({
    work: core.work,
    read: core.read,
    sessions: core.sessions,
    hasher: core.hasher,
    sessionQuery: new PgApiSessionQuery(core.database.db),
    sessionTtlSeconds: core.ttl,
    signerKeys: new JoseSignerKeys(),
    certificates: core.pki,
    verifyChain: (leaf, intermediates, roots, options) => verifyChain(leaf, intermediates, roots, options),
    lockout: (identityId, minutes) => d.identities.disable(identityId, minutes),
    onRefused: (reason, detail) => logger.info({ reason, ...detail }, 'authentication refused'),
    attempts: d.attempts,
    notices: d.notices,
    configTypes: new BusConfigTypeResolver(core.bus),
    onConfigTypesUnresolved: (err, detail) =>
      logger.warn({ err, ...detail }, 'login configTypes kept as sent: inventory did not resolve them'),
  });
  return {
    authentication,
    sync: new SessionFactorSync(core.work, core.sessions, core.ttl),
    sweeper: new ApiSessionSweeper(core.work, core.sessions, {
      onError: (err) => logger.warn({ err }, 'sweep failed; will retry'),
    }),
  };
}
