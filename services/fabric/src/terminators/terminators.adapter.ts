import {
  type CreateTerminatorRequest,
  type DialTerminator,
  type SessionUseVerdict,
  fabricCallContracts,
} from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { SessionAuthority, TerminatorOwner } from './terminators.ports.ts';

/** inventory's terminators over the bus. */
export class BusTerminatorOwner implements TerminatorOwner {
  constructor(private readonly bus: Bus) {}

  create(request: CreateTerminatorRequest) {
    return callService(this.bus, 'inventory', fabricCallContracts.createTerminator, request);
  }

  async remove(routerId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return (await callService(this.bus, 'inventory', fabricCallContracts.removeTerminators, { routerId, ids })).removed;
  }

  dialTargets(serviceId: string) {
    return callService(this.bus, 'inventory', fabricCallContracts.dialTargets, { serviceId });
  }

  async ofRouter(routerId: string): Promise<DialTerminator[]> {
    return (await callService(this.bus, 'inventory', fabricCallContracts.routerTerminators, { routerId })).terminators;
  }
}

/** policy's verdicts over the bus. */
export class BusSessionAuthority implements SessionAuthority {
  constructor(private readonly bus: Bus) {}

  authorize(token: string, type: 'Dial' | 'Bind', routerId: string): Promise<SessionUseVerdict> {
    return callService(this.bus, 'policy', fabricCallContracts.authorizeSessionUse, { token, type, routerId });
  }
}
