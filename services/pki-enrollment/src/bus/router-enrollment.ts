import { inventoryCallContracts, maintenanceCallContracts, routerEnrollmentCallContracts } from '@ziti/contracts';
import {
  type Bus,
  type CallTable,
  type OperationHandlerMap,
  callHandlers,
  callService,
  firstQueryValue,
  reply,
} from '@ziti/platform';
import type { EnrollService } from '../domain/enroll-service.ts';
import type { Enrollment } from '../domain/model.ts';
import type { RouterDirectory, RouterEnrollmentService, RouterKind } from '../domain/router-enrollment.ts';

/** inventory, the owner of routers, over the bus; when it does not answer: 503, as at the gateway. */
export class BusRouterDirectory implements RouterDirectory {
  constructor(private readonly bus: Bus) {}

  async enrolled(input: { routerId: string; kind: RouterKind; fingerprint: string; certPem: string }): Promise<void> {
    await callService(this.bus, 'inventory', inventoryCallContracts.routerEnrolled, input);
  }

  async byFingerprint(fingerprint: string) {
    return (await callService(this.bus, 'inventory', inventoryCallContracts.routerByFingerprint, { fingerprint }))
      .router;
  }

  async certificateChanged(input: {
    routerId: string;
    previousFingerprint: string;
    fingerprint: string;
    certPem: string;
  }): Promise<void> {
    await callService(this.bus, 'inventory', inventoryCallContracts.routerCertificateChanged, input);
  }

  async existingEdgeRouters(ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const { states } = await callService(this.bus, 'inventory', maintenanceCallContracts.entityStates, {
        type: 'edgeRouter',
        ids: ids.slice(i, i + 500),
      });
      for (const s of states) found.add(String(s.id));
    }
    return found;
  }
}

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

/** The operations of router enrollment; pki-enrollment's other operations are in operations.ts. */
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
  };
}
