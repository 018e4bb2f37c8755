import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { CredentialPort } from '../shared/credentials.ports.ts';
import type { Enrollment } from '../shared/model.domain.ts';
import type { EnrollmentService } from './enrollments.domain.ts';
import { enrollmentDetail } from './enrollments.mapper.ts';

/** The management operations on enrollments (each shown with its identity's name, asked of auth). */
export function enrollmentOperations(deps: {
  enrollments: EnrollmentService;
  credentials: Pick<CredentialPort, 'identities'>;
}) {
  const { enrollments, credentials } = deps;

  async function enrollmentDetails(list: Enrollment[]) {
    const owners = await credentials.identities(list.flatMap((e) => (e.identityId ? [e.identityId] : [])));
    return list.map((e) => enrollmentDetail(e, e.identityId ? owners.get(e.identityId) : undefined));
  }

  return {
    'management.listEnrollments': async (req) => {
      const page = await enrollments.list(listInputOf(req));
      return pageReply({ ...page, items: await enrollmentDetails(page.items) });
    },
    'management.getIdentityEnrollments': async (req) => {
      const page = await enrollments.list(listInputOf(req), pathIdOf(req));
      return pageReply({ ...page, items: await enrollmentDetails(page.items) });
    },
    'management.createEnrollment': async (req) => reply.created((await enrollments.create(req.body)).id, 'enrollments'),
    'management.detailEnrollment': async (req) =>
      reply.ok((await enrollmentDetails([await enrollments.get(pathIdOf(req))]))[0]),
    'management.deleteEnrollment': async (req) => {
      await enrollments.delete(pathIdOf(req));
      return reply.empty();
    },
    'management.refreshEnrollment': async (req) => {
      const refreshed = await enrollments.refresh(pathIdOf(req), req.body.expiresAt);
      // The spec declares a create envelope (the reference sends an empty one): the id and link fit both.
      return reply.json({
        data: { id: refreshed.id, _links: { self: { href: `./enrollments/${refreshed.id}` } } },
        meta: {},
      });
    },
  } satisfies Partial<OperationHandlers<'pki-enrollment'>>;
}
