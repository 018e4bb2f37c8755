import {
  type CreateTerminatorRequest,
  type DialTerminator,
  type SessionUseVerdict,
  fabricCallContracts,
} from '@ziti/contracts';
import { randomUUID } from 'node:crypto';
import { type Bus, callService, withRequestMeta } from '@ziti/platform';
import type { ChangeOrigin, SessionAuthority, TerminatorOwner } from './terminators.ports.ts';

/** A router's request as the operation its changes were made for (their events and audit records carry it). */
function onBehalfOf<T>(origin: ChangeOrigin, fn: () => Promise<T>): Promise<T> {
  return withRequestMeta(
    {
      requestId: `ctrl-${randomUUID()}`,
      operation: origin.operation,
      remoteAddress: origin.remoteAddress,
      ...(origin.identityId ? { identityId: origin.identityId } : {}),
      ...(origin.apiSessionId ? { apiSessionId: origin.apiSessionId } : {}),
    },
    fn,
  );
}

/** inventory's terminators over the bus. */
export class BusTerminatorOwner implements TerminatorOwner {
  constructor(private readonly bus: Bus) {}

  create(request: CreateTerminatorRequest, origin: ChangeOrigin) {
    return onBehalfOf(origin, () => callService(this.bus, 'inventory', fabricCallContracts.createTerminator, request));
  }

  async remove(routerId: string, ids: string[], origin: ChangeOrigin): Promise<string[]> {
    if (ids.length === 0) return [];
    const reply = await onBehalfOf(origin, () =>
      callService(this.bus, 'inventory', fabricCallContracts.removeTerminators, { routerId, ids }),
    );
    return reply.removed;
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
