import { type OperationRequest, type RouterPresenceView, presenceShown } from '@ziti/contracts';
import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply, roleFilterOf } from '@ziti/platform';
import type { RouterPresenceService } from '../router-presence/router-presence.domain.ts';
import type { InventoryCallHandlers } from '../shared/calls.transport.ts';
import type { Router, RouterEnrollment, RouterKind } from '../shared/model.domain.ts';
import type { WithBody } from '../shared/requests.transport.ts';
import type { RouterInput, RouterService } from './routers.domain.ts';
import { edgeRouterDetail, routerDetail } from './routers.mapper.ts';

type Show = (r: Router, presence: RouterPresenceView, e?: RouterEnrollment) => unknown;

interface RouterDetailDeps {
  routers: Pick<RouterService, 'pendingEnrollments'>;
  presence: Pick<RouterPresenceService, 'of'>;
}

/**
 * Routers with their presence as reads show it (offline: as never connected, `presenceShown`), and
 * the pending enrollment of each unverified one (pki-enrollment owns them): what the router reads
 * and the `edgeRouterDetails` call (policy's association lists) answer alike.
 */
async function routerDetailsOf<D>(
  deps: RouterDetailDeps,
  list: Router[],
  show: (r: Router, presence: RouterPresenceView, e?: RouterEnrollment) => D,
): Promise<D[]> {
  if (list.length === 0) return [];
  const [pending, present] = await Promise.all([
    deps.routers.pendingEnrollments(list),
    deps.presence.of(list.map((r) => r.id)),
  ]);
  return list.map((r) => show(r, presenceShown(present.get(r.id)), pending.get(r.id)));
}

/** Edge routers (`/edge-routers`) and transit routers (`/routers`, and `/transit-routers`, the newer path). */
export function routerOperations(deps: { routers: RouterService; presence: RouterPresenceService }) {
  const { routers } = deps;

  const routerDetails = (list: Router[], show: Show) => routerDetailsOf(deps, list, show);

  /**
   * list/create/detail/update/patch/delete of one kind of router; the table names the operation each
   * serves. The fabric paths (`/routers`, `/transit-routers`) create transit routers and read, change
   * and delete every router, edge routers too, as the reference's router manager does.
   */
  function routerHandlers(kind: RouterKind, show: Show, collection: string) {
    const any = kind === 'edge' ? kind : undefined;
    return {
      list: async (req: OperationRequest) => {
        const page = await routers.list(any, listInputOf(req), kind === 'edge' ? roleFilterOf(req) : undefined);
        return pageReply({ ...page, items: await routerDetails(page.items, show) });
      },
      create: async (req: WithBody<RouterInput>) =>
        reply.created((await routers.create(kind, req.body)).id, collection),
      detail: async (req: OperationRequest) =>
        reply.ok((await routerDetails([await routers.get(any, pathIdOf(req))], show))[0]),
      update: async (req: WithBody<RouterInput>) => {
        await routers.update(any, pathIdOf(req), req.body, 'replace');
        return reply.empty();
      },
      patch: async (req: WithBody<RouterInput>) => {
        await routers.update(any, pathIdOf(req), req.body, 'patch');
        return reply.empty();
      },
      delete: async (req: OperationRequest) => {
        await routers.delete(any, pathIdOf(req));
        return reply.empty();
      },
    };
  }
  const edgeRouters = routerHandlers('edge', edgeRouterDetail, 'edge-routers');
  const transitRouters = routerHandlers('transit', (r, p, e) => routerDetail(r, 'routers', p, e), 'routers');
  const transitRoutersByNewPath = routerHandlers(
    'transit',
    (r, p, e) => routerDetail(r, 'transit-routers', p, e),
    'transit-routers',
  );

  return {
    'management.listEdgeRouters': edgeRouters.list,
    'management.createEdgeRouter': edgeRouters.create,
    'management.detailEdgeRouter': edgeRouters.detail,
    'management.updateEdgeRouter': edgeRouters.update,
    'management.patchEdgeRouter': edgeRouters.patch,
    'management.deleteEdgeRouter': edgeRouters.delete,
    'management.reEnrollEdgeRouter': async (req) => {
      await routers.reEnroll(pathIdOf(req));
      return reply.empty();
    },
    'management.listRouters': transitRouters.list,
    'management.createRouter': transitRouters.create,
    'management.detailRouter': transitRouters.detail,
    'management.updateRouter': transitRouters.update,
    'management.patchRouter': transitRouters.patch,
    'management.deleteRouter': transitRouters.delete,
    'management.listTransitRouters': transitRoutersByNewPath.list,
    'management.createTransitRouter': transitRoutersByNewPath.create,
    'management.detailTransitRouter': transitRoutersByNewPath.detail,
    'management.updateTransitRouter': transitRoutersByNewPath.update,
    'management.patchTransitRouter': transitRoutersByNewPath.patch,
    'management.deleteTransitRouter': transitRoutersByNewPath.delete,
  } satisfies Partial<OperationHandlers<'inventory'>>;
}

/**
 * The calls pki-enrollment makes while it enrolls routers and extends their certificates, and the
 * edge-router details of policy's association lists (the same as `GET /edge-routers/{id}`).
 */
export function routerCalls(routers: RouterService, presence: RouterPresenceService) {
  return {
    edgeRouterDetails: async ({ ids }) => ({
      details: await routerDetailsOf({ routers, presence }, await routers.getMany('edge', ids), edgeRouterDetail),
    }),
    routerEnrolled: async (request) => {
      await routers.markEnrolled(request);
      return {};
    },
    routerByFingerprint: async ({ fingerprint }) => {
      const router = await routers.byFingerprint(fingerprint);
      return {
        router: router ? { id: router.id, name: router.name, kind: router.kind, isVerified: router.isVerified } : null,
      };
    },
    routerCertificateChanged: async (request) => {
      await routers.changeCertificate(request);
      return {};
    },
  } satisfies Partial<InventoryCallHandlers>;
}
