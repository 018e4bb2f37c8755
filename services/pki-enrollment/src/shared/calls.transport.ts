import { pkiEnrollmentCallContracts } from '@ziti/contracts';
import { type CallTable, callHandlers } from '@ziti/platform';
import type { CaService } from '../cas/cas.domain.ts';
import type { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import type { EnrollmentService } from '../enrollments/enrollments.domain.ts';

export interface PkiCallDeps {
  pki: ControllerPkiService;
  cas: CaService;
  enrollments: EnrollmentService;
}

/**
 * Service-to-service calls pki-enrollment serves on `ziti.rpc.pki-enrollment.call.<action>`
 * (contracts in packages/contracts/src/service-calls.ts).
 */
export function pkiCalls(deps: PkiCallDeps): CallTable {
  const { pki, cas, enrollments } = deps;
  return callHandlers(pkiEnrollmentCallContracts, {
    serverIdentity: async () => pki.serverIdentity(),
    verifyClientCertificate: ({ chainPem, purpose }) =>
      purpose === 'authenticator'
        ? cas.verifyAuthenticatorCertificate(chainPem)
        : cas.verifyClientCertificate(chainPem),
    pendingEnrollments: async ({ identityIds }) => ({ enrollments: await enrollments.pendingFor(identityIds) }),
    createIdentityEnrollments: async ({ identityId, enrollments: specs }) => ({
      ids: await enrollments.createForIdentity(identityId, specs),
    }),
    deleteIdentityEnrollments: async ({ identityId, ids }) => ({
      ids: await enrollments.deleteForIdentity(identityId, ids),
    }),
  });
}
