import { type OperationRequest, listEnvelope } from '@ziti/contracts';
import { type OperationHandler, type OperationHandlers, listInputOf, reply, roleFilterOf } from '@ziti/platform';
import type { ConfigInput, ConfigService } from '../domain/configs.ts';
import type { ConfigTypeInput, ConfigTypeService } from '../domain/config-types.ts';
import type { DatabaseMaintenance } from '../domain/database-maintenance.ts';
import type { IdentityServiceConfigService, ServiceConfigPair } from '../domain/identity-service-configs.ts';
import type { Config, ListPage, Router, RouterEnrollment, RouterKind, Terminator } from '../domain/model.ts';
import type { RouterInput, RouterService } from '../domain/routers.ts';
import type { ServiceCatalog, ServiceInput } from '../domain/services.ts';
import type { TerminatorInput, TerminatorService } from '../domain/terminators.ts';
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

const body = <T>(req: OperationRequest) => (req.body ?? {}) as T;
const id = (req: OperationRequest) => req.params.id ?? '';

/** The operations inventory implements, keyed `<api>.<operationId>`; the rest answer 501. */
export function inventoryOperations(deps: InventoryOperationDeps = {} as InventoryOperationDeps): OperationHandlers {
  const { configTypes, configs, services, routers, terminators, identityServiceConfigs, maintenance } = deps;

  const listPage = async <T, W>(p: ListPage<T>, map: (items: T[]) => Promise<W[]> | W[]) =>
    reply.json(listEnvelope(await map(p.items), { ...p.pagination, totalCount: p.totalCount }, p.filterableFields));

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
    (mode: 'replace' | 'patch'): OperationHandler =>
    async (req) => {
      await services.update(id(req), body<ServiceInput>(req), mode);
      return reply.empty();
    };
  const deleteService: OperationHandler = async (req) => {
    await services.delete(id(req));
    return reply.empty();
  };

  /** Routers with the pending enrollment of each unverified one (pki-enrollment owns them). */
  async function routerDetails(list: Router[], show: (r: Router, e?: RouterEnrollment) => unknown) {
    const pending = await routers.pendingEnrollments(list);
    return list.map((r) => show(r, pending.get(r.id)));
  }

  function routerHandlers(
    kind: RouterKind,
    names: { list: string; create: string; detail: string; update: string; patch: string; delete: string },
    show: (r: Router, e?: RouterEnrollment) => unknown,
    collection: string,
  ) {
    return {
      [names.list]: async (req: OperationRequest) =>
        listPage(await routers.list(kind, listInputOf(req), kind === 'edge' ? roleFilterOf(req) : undefined), (items) =>
          routerDetails(items, show),
        ),
      [names.create]: async (req: OperationRequest) =>
        reply.created((await routers.create(kind, body<RouterInput>(req))).id, collection),
      [names.detail]: async (req: OperationRequest) =>
        reply.ok((await routerDetails([await routers.get(kind, id(req))], show))[0]),
      [names.update]: async (req: OperationRequest) => {
        await routers.update(kind, id(req), body<RouterInput>(req), 'replace');
        return reply.empty();
      },
      [names.patch]: async (req: OperationRequest) => {
        await routers.update(kind, id(req), body<RouterInput>(req), 'patch');
        return reply.empty();
      },
      [names.delete]: async (req: OperationRequest) => {
        await routers.delete(kind, id(req));
        return reply.empty();
      },
    } satisfies OperationHandlers;
  }

  return {
    // Config types
    'management.listConfigTypes': async (req) =>
      listPage(await configTypes.list(listInputOf(req)), (items) => items.map(configTypeDetail)),
    'management.createConfigType': async (req) =>
      reply.created((await configTypes.create(body<ConfigTypeInput>(req))).id, 'config-types'),
    'management.detailConfigType': async (req) => reply.ok(configTypeDetail(await configTypes.get(id(req)))),
    'management.updateConfigType': async (req) => {
      await configTypes.update(id(req), body<ConfigTypeInput>(req), 'replace');
      return reply.empty();
    },
    'management.patchConfigType': async (req) => {
      await configTypes.update(id(req), body<ConfigTypeInput>(req), 'patch');
      return reply.empty();
    },
    'management.deleteConfigType': async (req) => {
      await configTypes.delete(id(req));
      return reply.empty();
    },
    'management.listConfigsForConfigType': async (req) =>
      listPage(await configs.listForType(id(req), listInputOf(req)), configDetails),

    // Configs
    'management.listConfigs': async (req) => listPage(await configs.list(listInputOf(req)), configDetails),
    'management.createConfig': async (req) =>
      reply.created((await configs.create(body<ConfigInput>(req))).id, 'configs'),
    'management.detailConfig': async (req) => reply.ok((await configDetails([await configs.get(id(req))]))[0]),
    'management.updateConfig': async (req) => {
      await configs.update(id(req), body<ConfigInput>(req), 'replace');
      return reply.empty();
    },
    'management.patchConfig': async (req) => {
      await configs.update(id(req), body<ConfigInput>(req), 'patch');
      return reply.empty();
    },
    'management.deleteConfig': async (req) => {
      await configs.delete(id(req));
      return reply.empty();
    },
    // Services
    'management.createService': async (req) =>
      reply.created((await services.create(body<ServiceInput>(req))).id, 'services'),
    'management.updateService': updateService('replace'),
    'management.patchService': updateService('patch'),
    'management.deleteService': deleteService,
    'management.listServiceConfig': async (req) => {
      await services.get(id(req));
      return listPage(await configs.list(listInputOf(req), { serviceId: id(req) }), configDetails);
    },
    'management.listServiceTerminators': async (req) =>
      listPage(await terminators.listForService(id(req), listInputOf(req)), terminatorDetails),
    'client.updateService': updateService('replace'),
    'client.patchService': updateService('patch'),
    'client.deleteService': deleteService,

    // Identity service configs
    'management.listIdentitysServiceConfigs': async (req) => {
      const list = await identityServiceConfigs.list(id(req));
      const data = list.map((l) => serviceConfigDetail(l, { service: l.service?.name, config: l.config?.name }));
      return reply.json(listEnvelope(data, { limit: data.length, offset: 0, totalCount: data.length }));
    },
    'management.associateIdentitysServiceConfigs': async (req) => {
      await identityServiceConfigs.associate(id(req), body<ServiceConfigPair[]>(req));
      return reply.empty();
    },
    'management.disassociateIdentitysServiceConfigs': async (req) => {
      await identityServiceConfigs.disassociate(id(req), (req.body ?? []) as ServiceConfigPair[]);
      return reply.empty();
    },

    // Routers
    ...routerHandlers(
      'edge',
      {
        list: 'management.listEdgeRouters',
        create: 'management.createEdgeRouter',
        detail: 'management.detailEdgeRouter',
        update: 'management.updateEdgeRouter',
        patch: 'management.patchEdgeRouter',
        delete: 'management.deleteEdgeRouter',
      },
      edgeRouterDetail,
      'edge-routers',
    ),
    'management.reEnrollEdgeRouter': async (req) => {
      await routers.reEnroll(id(req));
      return reply.empty();
    },
    ...routerHandlers(
      'transit',
      {
        list: 'management.listRouters',
        create: 'management.createRouter',
        detail: 'management.detailRouter',
        update: 'management.updateRouter',
        patch: 'management.patchRouter',
        delete: 'management.deleteRouter',
      },
      (r, e) => routerDetail(r, 'routers', e),
      'routers',
    ),
    ...routerHandlers(
      'transit',
      {
        list: 'management.listTransitRouters',
        create: 'management.createTransitRouter',
        detail: 'management.detailTransitRouter',
        update: 'management.updateTransitRouter',
        patch: 'management.patchTransitRouter',
        delete: 'management.deleteTransitRouter',
      },
      (r, e) => routerDetail(r, 'transit-routers', e),
      'transit-routers',
    ),

    // Terminators
    'management.listTerminators': async (req) => listPage(await terminators.list(listInputOf(req)), terminatorDetails),
    'management.createTerminator': async (req) =>
      reply.created((await terminators.create(body<TerminatorInput>(req))).id, 'terminators'),
    'management.detailTerminator': async (req) =>
      reply.ok((await terminatorDetails([await terminators.get(id(req))]))[0]),
    'management.updateTerminator': async (req) => {
      await terminators.update(id(req), body<TerminatorInput>(req), 'replace');
      return reply.empty();
    },
    'management.patchTerminator': async (req) => {
      await terminators.update(id(req), body<TerminatorInput>(req), 'patch');
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
