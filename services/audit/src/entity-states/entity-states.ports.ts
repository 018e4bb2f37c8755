import type { EntityOwner } from '@ziti/contracts';
import type { LockOption } from '@ziti/platform/db/row-lock';
import type { EntityStateValue } from '../trail/state-diff.domain.ts';

/** The last state the trail knows of one entity. */
export interface KnownEntityState {
  state: EntityStateValue;
  /** A tombstone: the entity was deleted (`state` is its last state). */
  deleted: boolean;
  /** The position of its owner's event (or state page) that wrote it. */
  position: number;
}

/** The trail's read model of every entity the owners announce (docs/adr/0008: guarded by positions). */
export interface EntityStateStore {
  /** The entity's last known state (tombstones too); `forUpdate` holds its row until the transaction ends. */
  get(entityType: string, id: string, options?: LockOption): Promise<KnownEntityState | null>;
  /**
   * Writes the entity's state (or, `deleted`, its tombstone) at `position`, unless a write of a later
   * position of its source is there already. Returns whether it wrote.
   */
  put(
    entry: { entityType: string; id: string; source: EntityOwner; state: EntityStateValue; deleted: boolean },
    position: number,
  ): Promise<boolean>;
  /**
   * `put`, returning the state known before it (its row held until the transaction ends, as `get`
   * with `forUpdate`) and, with `nameOf`, that other entity's known name: one round trip for what
   * applying an entity event reads and writes.
   */
  replace(
    entry: { entityType: string; id: string; source: EntityOwner; state: EntityStateValue; deleted: boolean },
    position: number,
    nameOf?: { entityType: string; id: string },
  ): Promise<{ known: KnownEntityState | null; name: string | undefined; stored: boolean }>;
}
