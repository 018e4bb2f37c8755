import type { OperationReply, OperationRequest } from '@ziti/contracts';
import { type OperationHandlers, listInputOf, pageReply, reply, roleFilterOf } from '@ziti/platform';
import type { ConfigService } from '../domain/configs.ts';
import type { ConfigTypeService } from '../domain/config-types.ts';
import type { DatabaseMaintenance } from '../domain/database-maintenance.ts';
import type { IdentityServiceConfigService } from '../domain/identity-service-configs.ts';
import type { Config, Router, RouterEnrollment, RouterKind, Terminator } from '../domain/model.ts';
import type { RouterInput, RouterService } from '../domain/routers.ts';
import type { ServiceCatalog, ServiceInput } from '../domain/services.ts';
import type { TerminatorService } from '../domain/terminators.ts';
import {
  configDetail,
  configTypeDetail,
  dataIntegrityDetail,
  edgeRouterDetail,
  routerDetail,
  serviceConfigDetail,
  terminatorDetail,
} from './mappers.ts';

export interface InventoryOperationDeps {
  configTypes: ConfigTypeService;
  configs: ConfigService;
  services: ServiceCatalog;
  routers: RouterService;
  terminators: TerminatorService;
  identityServiceConfigs: IdentityServiceConfigService;
  maintenance: DatabaseMaintenance;
}

const id = (req: OperationRequest) => req.params.id ?? '';

/** A request whose body decodes to `B` (each of the operations a shared handler serves). */
type WithBody<B> = OperationRequest & { body: B };

/** Every operation inventory owns, keyed `<api>.<operationId>` (the compiler checks it names each one). */
export function inventoryOperations(
  deps: InventoryOperationDeps = {} as InventoryOperationDeps,
): OperationHandlers<'inventory'> {
  const { configTypes, configs, services, routers, terminators, identityServiceConfigs, maintenance } = deps;

  async function configDetails(list: Config[]) {
    const types = await configs.typesOf(list);
    return list.map((c) => configDetail(c, types.get(c.configTypeId)));
  }

  async function terminatorDetails(list: Terminator[]) {
    const names = await terminators.referenceNames(list);
    return list.map((t) =>
      terminatorDetail(t, { service: names.services.get(t.serviceId), router: names.routers.get(t.routerId) }),
    );
  }

  const updateService =
    (mode: 'replace' | 'patch') =>
    async (req: WithBody<ServiceInput>): Promise<OperationReply> => {
      await services.update(id(req), req.body, mode);
      return reply.empty();
    };
  const deleteService = async (req: OperationRequest): Promise<OperationReply> => {
    await services.delete(id(req));
    return reply.empty();
  };

  /** Routers with the pending enrollment of each unverified one (pki-enrollment owns them). */
  async function routerDetails(list: Router[], show: (r: Router, e?: RouterEnrollment) => unknown) {
    const pending = await routers.pendingEnrollments(list);
    return list.map((r) => show(r, pending.get(r.id)));
  }

  /** list/create/detail/update/patch/delete of one kind of router; the table names the operation each serves. */
  function routerHandlers(kind: RouterKind, show: (r: Router, e?: RouterEnrollment) => unknown, collection: string) {
    return {
      list: async (req: OperationRequest) => {
        const page = await routers.list(kind, listInputOf(req), kind === 'edge' ? roleFilterOf(req) : undefined);
        return pageReply({ ...page, items: await routerDetails(page.items, show) });
      },
      create: async (req: WithBody<RouterInput>) =>
        reply.created((await routers.create(kind, req.body)).id, collection),
      detail: async (req: OperationRequest) =>
        reply.ok((await routerDetails([await routers.get(kind, id(req))], show))[0]),
      update: async (req: WithBody<RouterInput>) => {
        await routers.update(kind, id(req), req.body, 'replace');
        return reply.empty();
      },
      patch: async (req: WithBody<RouterInput>) => {
        await routers.update(kind, id(req), req.body, 'patch');
        return reply.empty();
      },
      delete: async (req: OperationRequest) => {
        await routers.delete(kind, id(req));
        return reply.empty();
      },
    };
  }
  const edgeRouters = routerHandlers('edge', edgeRouterDetail, 'edge-routers');
  const transitRouters = routerHandlers('transit', (r, e) => routerDetail(r, 'routers', e), 'routers');
  const transitRoutersByNewPath = routerHandlers(
    'transit',
    (r, e) => routerDetail(r, 'transit-routers', e),
    'transit-routers',
  );

  return {
    // Config types
    'management.listConfigTypes': async (req) => pageReply(await configTypes.list(listInputOf(req)), configTypeDetail),
    'management.createConfigType': async (req) =>
      reply.created((await configTypes.create(req.body)).id, 'config-types'),
    'management.detailConfigType': async (req) => reply.ok(configTypeDetail(await configTypes.get(id(req)))),
    'management.updateConfigType': async (req) => {
      await configTypes.update(id(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchConfigType': async (req) => {
      await configTypes.update(id(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteConfigType': async (req) => {
      await configTypes.delete(id(req));
      return reply.empty();
    },
    'management.listConfigsForConfigType': async (req) => {
      const page = await configs.listForType(id(req), listInputOf(req));
      return pageReply({ ...page, items: await configDetails(page.items) });
    },

    // Configs
    'management.listConfigs': async (req) => {
      const page = await configs.list(listInputOf(req));
      return pageReply({ ...page, items: await configDetails(page.items) });
    },
    'management.createConfig': async (req) => reply.created((await configs.create(req.body)).id, 'configs'),
    'management.detailConfig': async (req) => reply.ok((await configDetails([await configs.get(id(req))]))[0]),
    'management.updateConfig': async (req) => {
      await configs.update(id(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchConfig': async (req) => {
      await configs.update(id(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteConfig': async (req) => {
      await configs.delete(id(req));
      return reply.empty();
    },
    // Services
    'management.createService': async (req) => reply.created((await services.create(req.body)).id, 'services'),
    'management.updateService': updateService('replace'),
    'management.patchService': updateService('patch'),
    'management.deleteService': deleteService,
    'management.listServiceConfig': async (req) => {
      await services.get(id(req));
      const page = await configs.list(listInputOf(req), { serviceId: id(req) });
      return pageReply({ ...page, items: await configDetails(page.items) });
    },
    'management.listServiceTerminators': async (req) => {
      const page = await terminators.listForService(id(req), listInputOf(req));
      return pageReply({ ...page, items: await terminatorDetails(page.items) });
    },
    'client.updateService': updateService('replace'),
    'client.patchService': updateService('patch'),
    'client.deleteService': deleteService,

    // Identity service configs
    'management.listIdentitysServiceConfigs': async (req) => {
      const list = await identityServiceConfigs.list(id(req));
      const data = list.map((l) => serviceConfigDetail(l, { service: l.service?.name, config: l.config?.name }));
      // Not paged: every pair at once.
      return pageReply({ items: data, totalCount: data.length, pagination: { limit: data.length, offset: 0 } });
    },
    'management.associateIdentitysServiceConfigs': async (req) => {
      await identityServiceConfigs.associate(id(req), req.body);
      return reply.empty();
    },
    'management.disassociateIdentitysServiceConfigs': async (req) => {
      await identityServiceConfigs.disassociate(id(req), req.body ?? []);
      return reply.empty();
    },

    // Routers
    'management.listEdgeRouters': edgeRouters.list,
    'management.createEdgeRouter': edgeRouters.create,
    'management.detailEdgeRouter': edgeRouters.detail,
    'management.updateEdgeRouter': edgeRouters.update,
    'management.patchEdgeRouter': edgeRouters.patch,
    'management.deleteEdgeRouter': edgeRouters.delete,
    'management.reEnrollEdgeRouter': async (req) => {
      await routers.reEnroll(id(req));
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

    // Terminators
    'management.listTerminators': async (req) => {
      const page = await terminators.list(listInputOf(req));
      return pageReply({ ...page, items: await terminatorDetails(page.items) });
    },
    'management.createTerminator': async (req) => reply.created((await terminators.create(req.body)).id, 'terminators'),
    'management.detailTerminator': async (req) =>
      reply.ok((await terminatorDetails([await terminators.get(id(req))]))[0]),
    'management.updateTerminator': async (req) => {
      await terminators.update(id(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchTerminator': async (req) => {
      await terminators.update(id(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteTerminator': async (req) => {
      await terminators.delete(id(req));
      return reply.empty();
    },

    // Summary and database maintenance (ZITI-FACTS §7.7, §13)
    // The reference answers `meta: null`; `{}` keeps generated clients that require meta working.
    'management.listSummary': async () => reply.ok(await maintenance.summary()),
    'management.checkDataIntegrity': async () => {
      await maintenance.startIntegrityJob(false);
      return reply.empty(202);
    },
    'management.fixDataIntegrity': async () => {
      await maintenance.startIntegrityJob(true);
      return reply.empty(202);
    },
    'management.dataIntegrityResults': async () => {
      const detail = dataIntegrityDetail(await maintenance.results());
      return reply.json({
        data: detail,
        meta: { pagination: { limit: -1, offset: 0, totalCount: detail.results.length }, filterableFields: [] },
      });
    },
    'management.createDatabaseSnapshot': async () => {
      await maintenance.snapshot();
      return reply.empty();
    },
  };
}
