import { routerEnrollmentCallContracts } from '@ziti/contracts';
import {
  type CallTable,
  type OperationHandlerMap,
  type OperationHandlers,
  callHandlers,
  firstQueryValue,
  reply,
} from '@ziti/platform';
import type { EnrollService } from '../enrollments/enroll.domain.ts';
import type { Enrollment } from '../shared/model.domain.ts';
import type { RouterEnrollmentService } from './router-enrollments.domain.ts';

const info = (e: Enrollment) => ({
  id: e.id,
  token: e.token,
  jwt: e.jwt,
  createdAt: e.createdAt.toISOString(),
  expiresAt: e.expiresAt.toISOString(),
});

/** Calls pki-enrollment serves for inventory: a router's enrollment issued, revoked, shown. */
export function routerEnrollmentCalls(routers: RouterEnrollmentService): CallTable {
  return callHandlers(routerEnrollmentCallContracts, {
    issue: async ({ routerId, kind }) => info(await routers.issue(routerId, kind)),
    revoke: async ({ routerId }) => {
      await routers.revoke(routerId);
      return {};
    },
    pending: async ({ routerIds }) => {
      const pending = await routers.pending(routerIds);
      return { enrollments: Object.fromEntries([...pending].map(([id, e]) => [id, info(e)])) };
    },
  });
}

/** The operations of router enrollment; the others are `pkiOperations` (src/operations.transport.ts). */
export type RouterEnrollmentOperationKey = 'client.enrollErOtt' | 'client.extendRouterEnrollment';

/**
 * `POST /enroll/erott` (the spec's body: `clientCsr`, `serverCsr`, `token`; the token may also come
 * in the query as on `/enroll`) and `POST /enroll/extend/router` (`certCsr`, `serverCertCsr`, with
 * the router's current certificate on TLS). Both answer `{ca, cert, serverCert}`.
 */
export function routerEnrollmentOperations(
  routers: RouterEnrollmentService,
  enroll: EnrollService,
): OperationHandlerMap<RouterEnrollmentOperationKey> {
  return {
    'client.enrollErOtt': async (req) => {
      // The gateway keeps only the spec's properties (`clientCsr`, `serverCsr`, `token`).
      const { clientCsr, serverCsr } = req.body;
      const token = firstQueryValue(req.query.token) ?? req.body.token;
      const result = await enroll.enrollWithToken(
        {
          ...(token !== undefined ? { token } : {}),
          clientCertChain: req.clientCertChain ?? [],
          body: { certCsr: clientCsr, serverCertCsr: serverCsr },
        },
        'erott',
      );
      return result.kind === 'data' ? reply.ok(result.data) : reply.empty();
    },
    'client.extendRouterEnrollment': async (req) =>
      reply.ok(await routers.extend({ clientCertChain: req.clientCertChain ?? [], body: req.body })),
  } satisfies Partial<OperationHandlers<'pki-enrollment'>>;
}
