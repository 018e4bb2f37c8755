import type { EdgeRouterState, IdentityState, RouterPresenceState, ServiceState } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';

export interface ReadModelRow {
  id: string;
  state: Record<string, unknown>;
}

/**
 * policy's copy of another service's entities, kept from its events and its owner's state pages.
 * Every write carries the owner's event position and applies only over an older one.
 */
/**
 * What applying a state did: nothing (an older or the same state), or stored it, and whether what
 * depends on the entity must be derived again (false when only state nothing derives from moved)
 * and whether policy had no row of it at all before (not even a tombstone: nothing links it yet).
 */
export type Applied = false | { derive: boolean; fresh?: boolean };

/** What a derivation may take for granted about the entity it derives for. */
export interface EntityChange {
  /** Policy had no row of it before this change: nothing linked it, it had no access. */
  fresh?: boolean;
}

export interface EntityReadModel<S extends { id: string }> {
  /** Applies a state if `position` is newer than what is stored; returns whether it did. */
  apply(state: S, position: number, deleted: boolean): Promise<boolean>;
  /** `apply`, saying also whether what depends on the entity must be derived again. */
  applyState(state: S, position: number, deleted: boolean): Promise<Applied>;
  /** The owner no longer had the entity at `position`; applies over an older row only. */
  tombstone(id: string, position: number): Promise<boolean>;
  /** Live rows with ids in (`after`, `upTo`] other than `present` become tombstones at `position` (guarded likewise). */
  tombstoneAbsent(range: { after?: string; upTo?: string }, present: string[], position: number): Promise<number>;
  /** The position the stored row was written at. */
  positionOf(id: string): Promise<number | undefined>;
  /** The live row's state and the position it was written at (undefined when absent or a tombstone). */
  current(id: string): Promise<{ state: S; position: number } | undefined>;
  /** Deletes tombstones at or below `watermark` older than `olderThanSeconds`. */
  pruneTombstones(watermark: number, olderThanSeconds?: number): Promise<number>;
  /** Live rows with `after < id <= upTo` (bytewise id order), at most `limit`. */
  liveRows(after: string | undefined, upTo: string | undefined, limit: number): Promise<ReadModelRow[]>;
  roleAttributes(input: ListInput): Promise<ListPage<string>>;
}

export type IdentityReadModel = EntityReadModel<IdentityState>;
export type ServiceReadModel = EntityReadModel<ServiceState>;
export type EdgeRouterReadModel = EntityReadModel<EdgeRouterState>;
/** policy's copy of inventory's record of router presence (`routerPresence.changed`), one row per router. */
export type RouterPresenceReadModel = EntityReadModel<RouterPresenceState>;

/**
 * An edge router as policy's reads show it: inventory's state of the router and what inventory
 * last recorded of its control channel (`presence`; null when none was ever recorded: a router that
 * never connected). Read in the same statement as the router, so a list shows one snapshot.
 */
export type EdgeRouterWithPresence = EdgeRouterState & { presence: RouterPresenceState | null };
