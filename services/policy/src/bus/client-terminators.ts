import { ApiError, inventoryCallContracts } from '@ziti/contracts';
import { type Bus, type OperationHandlersPart, callService, listInputOf, reply } from '@ziti/platform';
import type { ClientTerminators, TerminatorCatalog } from '../domain/client-terminators.ts';
import { pathId } from './related-details.ts';

/** inventory renders the terminators; policy has decided the caller may see the service. */
export class BusTerminatorCatalog implements TerminatorCatalog {
  constructor(private readonly bus: Bus) {}

  forClient(serviceId: string, list: { filter?: string; limit?: string; offset?: string; sort?: string }) {
    return callService(this.bus, 'inventory', inventoryCallContracts.clientServiceTerminators, { serviceId, list });
  }
}

export function clientTerminatorOperations(deps: () => { clientTerminators: ClientTerminators }) {
  return {
    'client.listServiceTerminators': async (req) => {
      if (!req.caller) throw new ApiError('UNAUTHORIZED');
      const { identityId, isAdmin } = req.caller;
      return reply.json(await deps().clientTerminators.list({ identityId, isAdmin }, pathId(req), listInputOf(req)));
    },
  } satisfies OperationHandlersPart<'policy'>;
}
