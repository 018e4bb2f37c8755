import { type OperationHandlers, listInputOf, pageEnvelope, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { ServiceCatalog } from '../services/services.domain.ts';
import type { InventoryCallHandlers, InventoryFabricCallHandlers } from '../shared/calls.transport.ts';
import type { Terminator } from '../shared/model.domain.ts';
import type { TerminatorService } from './terminators.domain.ts';
import { dialTargetsReply, dialTerminator, terminatorClientDetail, terminatorDetail } from './terminators.mapper.ts';

/** Terminators (`/terminators`), and the terminators of a service. */
export function terminatorOperations(deps: { terminators: TerminatorService }) {
  const { terminators } = deps;

  async function terminatorDetails(list: Terminator[]) {
    const [names, costs] = await Promise.all([terminators.referenceNames(list), terminators.dynamicCosts(list)]);
    return list.map((t) =>
      terminatorDetail(
        t,
        { service: names.services.get(t.serviceId), router: names.routers.get(t.routerId) },
        costs.get(t.id) ?? 0,
      ),
    );
  }

  return {
    'management.listTerminators': async (req) => {
      const page = await terminators.list(listInputOf(req));
      return pageReply({ ...page, items: await terminatorDetails(page.items) });
    },
    'management.createTerminator': async (req) => reply.created((await terminators.create(req.body)).id, 'terminators'),
    'management.detailTerminator': async (req) =>
      reply.ok((await terminatorDetails([await terminators.get(pathIdOf(req))]))[0]),
    'management.updateTerminator': async (req) => {
      await terminators.update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchTerminator': async (req) => {
      await terminators.update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteTerminator': async (req) => {
      await terminators.delete(pathIdOf(req));
      return reply.empty();
    },
    'management.listServiceTerminators': async (req) => {
      const page = await terminators.listForService(pathIdOf(req), listInputOf(req));
      return pageReply({ ...page, items: await terminatorDetails(page.items) });
    },
  } satisfies Partial<OperationHandlers<'inventory'>>;
}

/** The call policy makes once it found the service visible to the caller (client listServiceTerminators). */
export function terminatorCalls(terminators: TerminatorService, services: ServiceCatalog) {
  return {
    clientServiceTerminators: async ({ serviceId, list }) => {
      const page = await terminators.listForService(serviceId, list);
      const name = (await services.get(serviceId)).name;
      return pageEnvelope(page, (t) => terminatorClientDetail(t, name));
    },
  } satisfies Partial<InventoryCallHandlers>;
}

/** The calls fabric makes for the SDKs that host services through routers, and for dials (docs/adr/0023). */
export function terminatorFabricCalls(terminators: TerminatorService) {
  return {
    createTerminator: (request) => terminators.createFromRouter(request),
    removeTerminators: async ({ routerId, ids }) => ({ removed: await terminators.removeFromRouter(routerId, ids) }),
    dialTargets: async ({ serviceId }) => dialTargetsReply(await terminators.dialTargets(serviceId)),
    routerTerminators: async ({ routerId }) => ({
      terminators: (await terminators.ofRouter(routerId)).map(dialTerminator),
    }),
  } satisfies Partial<InventoryFabricCallHandlers>;
}
