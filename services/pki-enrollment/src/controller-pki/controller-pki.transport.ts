import { type OperationHandlers, reply } from '@ziti/platform';
import type { ControllerPkiService } from './controller-pki.domain.ts';

/** The controller PKI's operations: its CA certificates. */
export function controllerPkiOperations(deps: { pki: ControllerPkiService }) {
  const { pki } = deps;

  // ZITI-FACTS §8.4: base64 PKCS#7 certs-only, served without authentication on both APIs.
  const cacerts = async () =>
    reply.raw('application/pkcs7-mime', pki.wellKnownCaCerts(), 200, { 'content-transfer-encoding': 'base64' });

  return {
    'client.listWellKnownCas': cacerts,
    'management.listWellKnownCas': cacerts,
  } satisfies Partial<OperationHandlers<'pki-enrollment'>>;
}
