import type { EdgeRouterState, IdentityState, ServiceState } from '@ziti/contracts';

export interface ListInput {
  filter?: string;
  limit?: string | number;
  offset?: string | number;
  sort?: string;
}

export interface ListPage<T> {
  items: T[];
  totalCount: number;
  pagination: { limit: number; offset: number };
  filterableFields: string[];
}

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
