import type { LockOption } from '@ziti/platform/db/row-lock';
import type { DialTargets, DialTerminator, ListInput, ListPage, PeerData, Terminator } from '../shared/model.domain.ts';

export interface TerminatorStore {
  get(id: string, options?: LockOption): Promise<Terminator | null>;
  /**
   * Inserts it (with the peer data its host gave, `{}` when none); false when a terminator with its
   * id exists (a concurrent insert of the same id waits for the other to commit, then answers false).
   */
  insert(terminator: Terminator, peerData?: PeerData): Promise<boolean>;
  update(terminator: Terminator): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Deletes those of `ids` that belong to the router; answers them. */
  deleteOfRouter(routerId: string, ids: string[]): Promise<Terminator[]>;
  /** Deletes every terminator of the router or the service; answers them. */
  deleteOf(owner: { routerId: string } | { serviceId: string }): Promise<Terminator[]>;
  list(input: ListInput, serviceId?: string): Promise<ListPage<Terminator>>;
  /** A service's dial facts and all its terminators with their routers' presence, in one statement. */
  dialTargets(serviceId: string): Promise<DialTargets>;
  /** A router's terminators as dials need them, in id order. */
  ofRouter(routerId: string): Promise<DialTerminator[]>;
}

/**
 * The dynamic part of terminators' costs (a terminator's `dynamicCost`), which the router edge
 * (fabric) keeps in memory from the dials it routes. Never fails: a router edge that does not answer
 * holds none (a restarted one starts from 0), so every id is 0 then.
 */
export interface TerminatorDynamicCosts {
  /** The dynamic cost of each of `ids` (0 for those it holds nothing of). */
  of(ids: string[]): Promise<Map<string, number>>;
}

/** No router edge: every dynamic cost is 0. */
export const noDynamicCosts: TerminatorDynamicCosts = {
  of: async (ids) => new Map(ids.map((id) => [id, 0])),
};
