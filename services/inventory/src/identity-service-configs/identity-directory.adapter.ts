import { maintenanceCallContracts as maintenance } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { IdentityDirectory } from './identity-service-configs.ports.ts';

/** Asks auth, the owner of identities, which of a set of ids exist. */
export class BusIdentityDirectory implements IdentityDirectory {
  constructor(private readonly bus: Bus) {}

  async existing(ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += 500) {
      const reply = await callService(
        this.bus,
        'auth',
        maintenance.entityStates,
        { type: 'identity', ids: unique.slice(i, i + 500) },
        { timeoutMs: 10_000 },
      );
      for (const s of reply.states) found.add(String(s.id));
    }
    return found;
  }
}
