import { inventoryCallContracts as inventory } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { ServiceExistencePort } from './identities.ports.ts';

/** ServiceExistencePort over the bus: inventory owns services. */
export class BusServiceExistence implements ServiceExistencePort {
  constructor(
    private readonly bus: Bus,
    private readonly timeoutMs = 5_000,
  ) {}

  async existing(ids: string[]): Promise<string[]> {
    const reply = await callService(
      this.bus,
      'inventory',
      inventory.existingServices,
      { ids },
      {
        timeoutMs: this.timeoutMs,
      },
    );
    return reply.ids;
  }
}
