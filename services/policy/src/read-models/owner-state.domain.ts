import type { EntityChange, EntityReadModel } from './read-models.ports.ts';

/**
 * How an owner's full state of an entity reaches policy (docs/adr/0008): it is applied to the read
 * model only over an older position, and when the row changed, what depends on the entity is
 * derived again in the same transaction (`changed`: its links and access, docs/adr/0009) unless
 * only state nothing derives from moved (an identity's envInfo at a login). The one
 * path of an owner's `<entity>.created|updated|deleted` event (read-model-events.transport.ts) and
 * of the role attributes a what-if proposes for an identity, a service or an edge router
 * (what-if/what-if.domain.ts). Returns whether the row changed.
 */
export async function applyOwnerState<S extends { id: string }>(
  model: EntityReadModel<S>,
  state: S,
  position: number,
  deleted: boolean,
  changed: (id: string, change: EntityChange) => Promise<void>,
): Promise<boolean> {
  const applied = await model.applyState(state, position, deleted);
  if (!applied) return false;
  if (applied.derive) await changed(state.id, applied.fresh ? { fresh: true } : {});
  return true;
}
