import { ApiError } from '@ziti/contracts';
import type { ServiceVisibility, TerminatorCatalog } from './client-terminators.ports.ts';

/**
 * `GET /edge/client/v1/services/{id}/terminators`: the terminators of a service the caller can see
 * (dial or bind, or any service for an administrator), as the reference's `listClientTerminators`
 * answers them; a service the caller can not see is NOT_FOUND.
 */
export class ClientTerminators {
  constructor(
    private readonly read: <T>(fn: (s: ServiceVisibility) => Promise<T>) => Promise<T>,
    private readonly catalog: TerminatorCatalog,
  ) {}

  async list(
    caller: { identityId: string; isAdmin: boolean },
    serviceId: string,
    list: { filter?: string; limit?: string; offset?: string; sort?: string },
  ): Promise<unknown> {
    if (!(await this.read((s) => s.serviceVisible(serviceId, caller.identityId, caller.isAdmin))))
      throw ApiError.notFound('service', serviceId);
    return this.catalog.forClient(serviceId, list);
  }
}
