import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { InventoryCallHandlers } from '../shared/calls.transport.ts';
import type { ConfigTypeService } from './config-types.domain.ts';
import { configTypeDetail } from './config-types.mapper.ts';

/** The call auth makes when a login sends `configTypes`: the ids its API session keeps. */
export function configTypeCalls(configTypes: ConfigTypeService) {
  return {
    configTypeIds: async ({ values }) => ({ ids: await configTypes.idsOf(values) }),
  } satisfies Partial<InventoryCallHandlers>;
}

/** Config types (`/config-types`); the configs of a type are listed with the configs. */
export function configTypeOperations(deps: { configTypes: ConfigTypeService }) {
  const { configTypes } = deps;
  return {
    'management.listConfigTypes': async (req) => pageReply(await configTypes.list(listInputOf(req)), configTypeDetail),
    'management.createConfigType': async (req) =>
      reply.created((await configTypes.create(req.body)).id, 'config-types'),
    'management.detailConfigType': async (req) => reply.ok(configTypeDetail(await configTypes.get(pathIdOf(req)))),
    'management.updateConfigType': async (req) => {
      await configTypes.update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchConfigType': async (req) => {
      await configTypes.update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteConfigType': async (req) => {
      await configTypes.delete(pathIdOf(req));
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'inventory'>>;
}
