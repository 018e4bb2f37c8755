import { authCallContracts } from '@ziti/contracts';
import { type CallTable, callHandlers } from '@ziti/platform';
import type { AuthenticationService } from '../api-sessions/authentication.domain.ts';
import type { CredentialService, EnrollmentPort } from '../credentials/credentials.domain.ts';
import type { IdentityService } from '../identities/identities.domain.ts';
import { identityDetailsOf } from '../identities/identities.transport.ts';

export interface AuthCallDeps {
  credentials: CredentialService;
  authentication: Pick<AuthenticationService, 'verifySecondary' | 'identitiesWithApiSessions' | 'apiSessionIdsOf'>;
  identities: Pick<IdentityService, 'views'>;
  /** pki-enrollment's outstanding enrollments, shown in identity details. */
  enrollments?: EnrollmentPort;
}

/**
 * Service-to-service calls auth serves on `ziti.rpc.auth.call.<action>` (credentials created by
 * enrollment, identities created by CA auto-enrollment, the gateway's external-JWT check, the
 * identity details of policy's association lists: the same as `GET /identities/{id}`).
 * Contracts in packages/contracts/src/service-calls.ts.
 */
export function authCalls(deps: AuthCallDeps): CallTable {
  const { credentials, authentication, identities } = deps;
  return callHandlers(authCallContracts, {
    createAuthenticator: (request) => credentials.createAuthenticator(request),
    getAuthenticator: ({ id }) => credentials.getAuthenticator(id),
    stageCertificate: async (request) => {
      await credentials.stageCertificate(request);
      return {};
    },
    replaceCertificate: async (request) => {
      await credentials.replaceCertificate(request);
      return {};
    },
    deleteAuthenticator: async ({ id }) => {
      await credentials.deleteAuthenticator(id);
      return {};
    },
    getIdentities: async ({ ids }) => ({ identities: await credentials.identities(ids) }),
    createIdentity: (request) => credentials.createIdentity(request),
    verifyExtJwtSecondary: (request) => authentication.verifySecondary(request),
    identityDetails: async ({ ids }) => ({ details: await identityDetailsOf(deps, await identities.views(ids)) }),
    apiSessionIdsOf: async ({ identityId }) => ({ ids: await authentication.apiSessionIdsOf(identityId) }),
  });
}
