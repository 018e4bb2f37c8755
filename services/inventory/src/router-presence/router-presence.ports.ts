import type { LockOption } from '@ziti/platform/db/row-lock';
import type { RouterConnection, RouterPresence, RouterPresenceRecord } from '../shared/model.domain.ts';

/** Router presences (`router_presence`), one per router that ever connected; leases run on the database's clock. */
export interface RouterPresenceStore {
  /** The router's presence, its row locked when asked; null when it never connected or is unknown. */
  get(routerId: string, options?: LockOption): Promise<RouterPresence | null>;
  /**
   * Records a router's first presence with a lease of `leaseMs` from now; null when one was recorded
   * meanwhile (or the router is gone): read that one, locked, instead.
   */
  insert(presence: RouterPresenceRecord, leaseMs: number): Promise<RouterPresence | null>;
  /** Rewrites the router's presence with a lease of `leaseMs` from now; `changed` moves `changedAt` to now. */
  update(presence: RouterPresenceRecord, leaseMs: number, changed: boolean): Promise<RouterPresence>;
  /**
   * In one statement: extends by `leaseMs` from now the lease of each listed connection that is its
   * router's current, online, unlapsed one; answers the others (each once).
   */
  renewLeases(connections: RouterConnection[], leaseMs: number): Promise<RouterConnection[]>;
  /**
   * In one statement: turns offline (`SYNC_DISCONNECTED`, no hostname or protocols) up to `limit`
   * online presences whose lease lapsed, skipping those another transaction holds; answers them.
   */
  lapse(limit: number): Promise<RouterPresence[]>;
  /** The presences of these routers (absent: never connected). */
  of(routerIds: string[]): Promise<RouterPresence[]>;
  /** One page of presences in router id order (bytewise), for owners' state pages. */
  page(after: string | undefined, limit: number, ids?: string[]): Promise<RouterPresence[]>;
}
