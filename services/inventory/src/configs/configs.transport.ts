import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { ServiceCatalog } from '../services/services.domain.ts';
import type { Config } from '../shared/model.domain.ts';
import type { ConfigService } from './configs.domain.ts';
import { configDetail } from './configs.mapper.ts';

/** Configs (`/configs`), and the configs of a config type and of a service. */
export function configOperations(deps: { configs: ConfigService; services: ServiceCatalog }) {
  const { configs, services } = deps;

  async function configDetails(list: Config[]) {
    const types = await configs.typesOf(list);
    return list.map((c) => configDetail(c, types.get(c.configTypeId)));
  }

  return {
    'management.listConfigsForConfigType': async (req) => {
      const page = await configs.listForType(pathIdOf(req), listInputOf(req));
      return pageReply({ ...page, items: await configDetails(page.items) });
    },
    'management.listConfigs': async (req) => {
      const page = await configs.list(listInputOf(req));
      return pageReply({ ...page, items: await configDetails(page.items) });
    },
    'management.createConfig': async (req) => reply.created((await configs.create(req.body)).id, 'configs'),
    'management.detailConfig': async (req) => reply.ok((await configDetails([await configs.get(pathIdOf(req))]))[0]),
    'management.updateConfig': async (req) => {
      await configs.update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchConfig': async (req) => {
      await configs.update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteConfig': async (req) => {
      await configs.delete(pathIdOf(req));
      return reply.empty();
    },
    'management.listServiceConfig': async (req) => {
      await services.get(pathIdOf(req));
      const page = await configs.list(listInputOf(req), { serviceId: pathIdOf(req) });
      return pageReply({ ...page, items: await configDetails(page.items) });
    },
  } satisfies Partial<OperationHandlers<'inventory'>>;
}
