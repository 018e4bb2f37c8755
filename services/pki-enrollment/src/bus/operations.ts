import type { OperationHandlers } from '@ziti/platform';
import { reply } from '@ziti/platform';
import type { ControllerPkiService } from '../domain/controller-pki.ts';

/** The operations this service implements, keyed `<api>.<operationId>`; the rest answer 501. */
export function pkiOperations(pki: ControllerPkiService): OperationHandlers {
  // ZITI-FACTS §8.4: base64 PKCS#7 certs-only, served without authentication on both APIs.
  const cacerts = async () =>
    reply.raw('application/pkcs7-mime', pki.wellKnownCaCerts(), 200, { 'content-transfer-encoding': 'base64' });
  return {
    'client.listWellKnownCas': cacerts,
    'management.listWellKnownCas': cacerts,
  };
}

export function pkiCalls(pki: ControllerPkiService): Record<string, (payload: unknown) => Promise<unknown>> {
  return {
    serverIdentity: async () => pki.serverIdentity(),
  };
}
