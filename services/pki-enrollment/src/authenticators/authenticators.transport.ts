import type { OperationRequestOf } from '@ziti/contracts';
import { type OperationHandlers, pathIdOf, reply } from '@ziti/platform';
import { owner } from '../shared/request.transport.ts';
import type { ExtensionService } from './extensions.domain.ts';

/** The operations on the caller's certificate authenticators (extension) and any authenticator (re-enroll). */
export function authenticatorOperations(deps: { extensions: ExtensionService }) {
  const { extensions } = deps;

  const extend = async (
    req: OperationRequestOf<
      'client.extendCurrentIdentityAuthenticator' | 'management.extendCurrentIdentityAuthenticator'
    >,
  ) => {
    const caller = owner(req);
    const result = await extensions.extend({
      identityId: caller.identityId,
      authenticatorId: pathIdOf(req),
      clientCertChain: req.clientCertChain ?? [],
      csrPem: req.body.clientCertCsr,
    });
    return reply.ok(result);
  };
  const extendVerify = async (
    req: OperationRequestOf<
      'client.extendVerifyCurrentIdentityAuthenticator' | 'management.extendVerifyCurrentIdentityAuthenticator'
    >,
  ) => {
    const caller = owner(req);
    await extensions.verifyExtension({
      identityId: caller.identityId,
      authenticatorId: pathIdOf(req),
      clientCertPem: req.body.clientCert,
    });
    return reply.empty();
  };

  return {
    'client.extendCurrentIdentityAuthenticator': extend,
    'management.extendCurrentIdentityAuthenticator': extend,
    'client.extendVerifyCurrentIdentityAuthenticator': extendVerify,
    'management.extendVerifyCurrentIdentityAuthenticator': extendVerify,
    'management.reEnrollAuthenticator': async (req) => {
      const enrollment = await extensions.reEnroll(pathIdOf(req), req.body.expiresAt);
      return reply.created(enrollment.id, 'enrollments');
    },
  } satisfies Partial<OperationHandlers<'pki-enrollment'>>;
}
