import { authCallContracts } from '@ziti/contracts';
import { type CallTable, callHandlers } from '@ziti/platform';
import type { AuthenticationService } from '../api-sessions/authentication.domain.ts';
import type { CredentialService } from '../credentials/credentials.domain.ts';

export interface AuthCallDeps {
  credentials: CredentialService;
  authentication: Pick<AuthenticationService, 'verifySecondary'>;
}

/**
 * Service-to-service calls auth serves on `ziti.rpc.auth.call.<action>` (credentials created by
 * enrollment, identities created by CA auto-enrollment, the gateway's external-JWT check).
 * Contracts in packages/contracts/src/service-calls.ts.
 */
export function authCalls(deps: AuthCallDeps): CallTable {
  const { credentials, authentication } = deps;
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
  });
}
