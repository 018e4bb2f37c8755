import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import { owner } from '../shared/request.transport.ts';
import type { SessionCertificateService } from './session-certificates.domain.ts';
import { sessionCertificateDetail } from './session-certificates.mapper.ts';

/** The operations on the certificates of the caller's API session. */
export function sessionCertificateOperations(deps: { sessionCertificates: SessionCertificateService }) {
  const { sessionCertificates } = deps;
  return {
    'client.listCurrentApiSessionCertificates': async (req) =>
      pageReply(await sessionCertificates.list(owner(req), listInputOf(req)), sessionCertificateDetail),
    'client.createCurrentApiSessionCertificate': async (req) => {
      const { certificate, cas: bundle } = await sessionCertificates.create(owner(req), req.body.csr);
      return reply.json(
        {
          data: {
            id: certificate.id,
            _links: { self: { href: `./current-api-session/certificates/${certificate.id}` } },
            certificate: certificate.certPem,
            cas: bundle,
          },
          meta: {},
        },
        201,
      );
    },
    'client.detailCurrentApiSessionCertificate': async (req) =>
      reply.ok(sessionCertificateDetail(await sessionCertificates.get(owner(req), pathIdOf(req)))),
    'client.deleteCurrentApiSessionCertificate': async (req) => {
      await sessionCertificates.delete(owner(req), pathIdOf(req));
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'pki-enrollment'>>;
}
