import { inventoryCallContracts as inventory } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { ConfigTypeResolver } from './api-sessions.ports.ts';

/**
 * ConfigTypeResolver over the bus: inventory owns config types. A login waits for it at most
 * `timeoutMs` (then keeps the values as sent: session-opening.domain.ts), so a slow inventory
 * slows a login by that much and fails none.
 */
export class BusConfigTypeResolver implements ConfigTypeResolver {
  constructor(
    private readonly bus: Bus,
    private readonly timeoutMs = 2_000,
  ) {}

  async ids(values: string[]): Promise<string[]> {
    return (
      await callService(this.bus, 'inventory', inventory.configTypeIds, { values }, { timeoutMs: this.timeoutMs })
    ).ids;
  }
}
