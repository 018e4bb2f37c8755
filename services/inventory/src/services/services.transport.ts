import type { OperationReply, OperationRequest } from '@ziti/contracts';
import { type OperationHandlers, pathIdOf, reply } from '@ziti/platform';
import type { WithBody } from '../shared/requests.transport.ts';
import type { InventoryCallHandlers } from '../shared/calls.transport.ts';
import type { ServiceCatalog, ServiceInput } from './services.domain.ts';

/** The call auth makes before it keeps an identity's hosting costs and precedences. */
export function serviceCalls(services: ServiceCatalog) {
  return {
    existingServices: async ({ ids }) => ({ ids: await services.existing(ids) }),
  } satisfies Partial<InventoryCallHandlers>;
}

/**
 * Services (`/services`, in the management and the client API); their configs and terminators
 * are listed with the configs and the terminators.
 */
export function serviceOperations(deps: { services: ServiceCatalog }) {
  const { services } = deps;

  const updateService =
    (mode: 'replace' | 'patch') =>
    async (req: WithBody<ServiceInput>): Promise<OperationReply> => {
      await services.update(pathIdOf(req), req.body, mode);
      return reply.empty();
    };
  const deleteService = async (req: OperationRequest): Promise<OperationReply> => {
    await services.delete(pathIdOf(req));
    return reply.empty();
  };

  return {
    'management.createService': async (req) => reply.created((await services.create(req.body)).id, 'services'),
    'management.updateService': updateService('replace'),
    'management.patchService': updateService('patch'),
    'management.deleteService': deleteService,
    'client.updateService': updateService('replace'),
    'client.patchService': updateService('patch'),
    'client.deleteService': deleteService,
  } satisfies Partial<OperationHandlers<'inventory'>>;
}
