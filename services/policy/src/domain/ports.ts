import type { EdgeRouterState, IdentityState, ServiceState } from '@ziti/contracts';
/** The list shapes are the platform's: every service lists through the same ZitiQL mechanism. */
import type { ListInput, ListPage } from '@ziti/platform';
export type { ListInput, ListPage };

export interface ReadModelRow {
  id: string;
  state: Record<string, unknown>;
}

/** policy's copy of another service's entities, kept from its events. */
export interface EntityReadModel<S extends { id: string }> {
  /** Applies a state if `sequence` is newer than what is stored; returns whether it did. */
  apply(state: S, sequence: number, deleted: boolean): Promise<boolean>;
  /** Repair: writes the owner's current state whatever the stored sequence (events still move it on). */
  overwrite(state: S): Promise<void>;
  /** Repair: the owner no longer has the entity. */
  tombstone(id: string): Promise<void>;
  /** Live rows with `after < id <= upTo` (bytewise id order), at most `limit`. */
  liveRows(after: string | undefined, upTo: string | undefined, limit: number): Promise<ReadModelRow[]>;
  roleAttributes(input: ListInput): Promise<ListPage<string>>;
}

export type IdentityReadModel = EntityReadModel<IdentityState>;
export type ServiceReadModel = EntityReadModel<ServiceState>;
export type EdgeRouterReadModel = EntityReadModel<EdgeRouterState>;
