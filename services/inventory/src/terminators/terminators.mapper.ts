import type { DialTerminator as DialTerminatorWire, DialTargets as DialTargetsWire } from '@ziti/contracts';
import { serviceLinks } from '../services/services.mapper.ts';
import type { DialTargets, DialTerminator, Terminator } from '../shared/model.domain.ts';
import { baseOf, ref, self, ts } from '../shared/wire.mapper.ts';

/**
 * ZITI-FACTS §12.4: router references point at `./transit-routers/{id}`, as in the reference.
 * `dynamicCost` is the router edge's (fabric's) dynamic cost of the terminator, not its static cost.
 */
export function terminatorDetail(t: Terminator, names: { service?: string; router?: string }, dynamicCost: number) {
  return {
    ...baseOf(t, self('terminators', t.id)),
    serviceId: t.serviceId,
    service: ref('services', t.serviceId, names.service, serviceLinks(t.serviceId)),
    routerId: t.routerId,
    router: ref('transit-routers', t.routerId, names.router, self('transit-routers', t.routerId)),
    binding: t.binding,
    address: t.address,
    identity: t.instanceId,
    cost: t.cost,
    dynamicCost,
    precedence: t.precedence,
  };
}

/** A `terminatorClientDetail`: what a client that may see the service is shown of a terminator. */
export function terminatorClientDetail(t: Terminator, serviceName: string | undefined) {
  return {
    ...baseOf(t, self('terminators', t.id)),
    serviceId: t.serviceId,
    service: ref('services', t.serviceId, serviceName, serviceLinks(t.serviceId)),
    routerId: t.routerId,
    identity: t.instanceId,
  };
}

/** A terminator as fabric dials it (`dialTerminatorSchema`). */
export function dialTerminator(t: DialTerminator): DialTerminatorWire {
  return {
    id: t.id,
    routerId: t.routerId,
    binding: t.binding,
    address: t.address,
    instanceId: t.instanceId,
    cost: t.cost,
    precedence: t.precedence,
    peerData: t.peerData,
    hostId: t.hostId,
    routerOnline: t.routerOnline,
    createdAt: ts(t.createdAt),
  };
}

/** `fabric.dialTargets`'s answer. */
export function dialTargetsReply(d: DialTargets): DialTargetsWire {
  return { service: d.service, terminators: d.terminators.map(dialTerminator) };
}
