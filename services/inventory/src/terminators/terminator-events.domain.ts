import { type TerminatorState, inventoryEventTypes } from '@ziti/contracts';
import type { Terminator } from '../shared/model.domain.ts';
import type { InventoryStores } from '../shared/stores.ports.ts';

/** A terminator as its events carry it: never the instance secret's hash, nor the peer data. */
export function terminatorState(t: Terminator): TerminatorState {
  return {
    id: t.id,
    serviceId: t.serviceId,
    routerId: t.routerId,
    binding: t.binding,
    address: t.address,
    instanceId: t.instanceId,
    cost: t.cost,
    precedence: t.precedence,
    hostId: t.hostId,
    tags: t.tags,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  };
}

const definitions = {
  created: inventoryEventTypes.terminatorCreated,
  updated: inventoryEventTypes.terminatorUpdated,
  deleted: inventoryEventTypes.terminatorDeleted,
} as const;

export async function emitTerminatorEvent(
  s: InventoryStores,
  what: 'created' | 'updated' | 'deleted',
  t: Terminator,
): Promise<void> {
  await s.events.emit(definitions[what], terminatorState(t));
}

/**
 * Removes the terminators of a router or a service that is being deleted (they would go with it)
 * and announces each, in the caller's transaction.
 */
export async function removeTerminatorsOf(
  s: InventoryStores,
  owner: { routerId: string } | { serviceId: string },
  now: Date,
): Promise<void> {
  for (const t of await s.terminators.deleteOf(owner))
    await emitTerminatorEvent(s, 'deleted', { ...t, updatedAt: now });
}
