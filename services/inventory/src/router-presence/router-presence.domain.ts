import {
  ApiError,
  type RouterPresenceReport,
  type RouterPresenceState,
  routerPresenceEventTypes,
} from '@ziti/contracts';
import type { RouterConnection, RouterPresence, RouterPresenceRecord } from '../shared/model.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';

/** A presence as `routerPresence.changed` and the state pages carry it. */
export function routerPresenceState(p: RouterPresence): RouterPresenceState {
  return {
    id: p.routerId,
    kind: p.kind,
    isOnline: p.isOnline,
    hostname: p.hostname,
    supportedProtocols: p.supportedProtocols,
    versionInfo: p.versionInfo,
    syncStatus: p.syncStatus,
    connectionId: p.connectionId,
    connectedAt: p.connectedAt.toISOString(),
    changedAt: p.changedAt.toISOString(),
  };
}

export async function emitRouterPresence(s: InventoryStores, p: RouterPresence): Promise<void> {
  await s.events.emit(routerPresenceEventTypes.routerPresenceChanged, routerPresenceState(p));
}

type Visible = Pick<RouterPresence, 'isOnline' | 'hostname' | 'supportedProtocols' | 'versionInfo' | 'syncStatus'>;

/** What a never-connected router shows (a router without a presence). */
const neverConnected: Visible = {
  isOnline: false,
  hostname: '',
  supportedProtocols: {},
  versionInfo: null,
  syncStatus: 'SYNC_UNKNOWN',
};

/** The same entries, in any order (jsonb keeps keys in its own order). */
function sameRecord(a: Record<string, string> | null, b: Record<string, string> | null): boolean {
  if (a === null || b === null) return a === b;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** Whether a reader of routers would see a difference (the connection and the lease are not shown). */
export function visiblyDiffers(a: Visible, b: Visible): boolean {
  return (
    a.isOnline !== b.isOnline ||
    a.hostname !== b.hostname ||
    a.syncStatus !== b.syncStatus ||
    !sameRecord(a.supportedProtocols, b.supportedProtocols) ||
    !sameRecord(a.versionInfo, b.versionInfo)
  );
}

/**
 * Whether a report replaces the recorded presence: it is of the same connection, or of a newer
 * one (accepted later). A report of an older connection (a disconnect that arrives after the
 * router reconnected elsewhere) changes nothing.
 */
export function supersedes(report: { connectionId: string; connectedAt: Date }, current: RouterPresence): boolean {
  return report.connectionId === current.connectionId || report.connectedAt.getTime() > current.connectedAt.getTime();
}

/**
 * The presence a report records over `current`: offline, no hostname or protocols (ZITI-FACTS
 * §12.2); the version info is the last one announced (an offline report, or an online one that
 * carries none, keeps it).
 */
export function presenceFromReport(
  r: RouterPresenceReport,
  connectedAt: Date,
  current: RouterPresence | null,
): RouterPresenceRecord {
  const last = current?.versionInfo ?? null;
  return {
    routerId: r.routerId,
    connectionId: r.connectionId,
    replicaId: r.replicaId,
    connectedAt,
    isOnline: r.isOnline,
    hostname: r.isOnline ? r.hostname : '',
    supportedProtocols: r.isOnline ? r.supportedProtocols : {},
    versionInfo: r.isOnline ? (r.versionInfo ?? last) : (last ?? r.versionInfo),
    syncStatus: r.syncStatus,
  };
}

/**
 * Router presence (docs/adr/0023): fabric holds the routers' control channels and reports each
 * connection's changes; inventory records what the controller believes and announces what readers
 * see change (`routerPresence.changed`). Each report applies under its presence's row lock; the
 * fabric replica holding a connection renews its lease, and the sweeper turns lapsed ones offline.
 */
export class RouterPresenceService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly read: UnitOfWork = work,
  ) {}

  /** Applies a report unless a newer connection of the router was recorded (or the router is unknown). */
  async report(r: RouterPresenceReport): Promise<{ applied: boolean }> {
    const connectedAt = new Date(r.connectedAt);
    if (Number.isNaN(connectedAt.getTime()))
      throw ApiError.field('connectedAt', 'connectedAt must be a date-time', r.connectedAt);
    return this.work(async (s) => {
      if (!(await s.routers.get(r.routerId))) return { applied: false };
      let current = await s.routerPresence.get(r.routerId, { forUpdate: true });
      if (!current) {
        const inserted = await s.routerPresence.insert(presenceFromReport(r, connectedAt, null), r.leaseMs);
        if (inserted) {
          if (visiblyDiffers(neverConnected, inserted)) await emitRouterPresence(s, inserted);
          return { applied: true };
        }
        // Another report of the router was recorded meanwhile: this one applies over it, or not.
        current = await s.routerPresence.get(r.routerId, { forUpdate: true });
        if (!current) return { applied: false };
      }
      if (!supersedes({ connectionId: r.connectionId, connectedAt }, current)) return { applied: false };
      const next = presenceFromReport(r, connectedAt, current);
      const changed = visiblyDiffers(current, next);
      const saved = await s.routerPresence.update(next, r.leaseMs, changed);
      if (changed) await emitRouterPresence(s, saved);
      return { applied: true };
    });
  }

  /** Extends the leases of a replica's connections; answers those that are no longer their router's current online one. */
  renewLeases(connections: RouterConnection[], leaseMs: number): Promise<RouterConnection[]> {
    return this.work((s) => s.routerPresence.renewLeases(connections, leaseMs));
  }

  /** The presences of these routers, by router id (absent: never connected). */
  async of(routerIds: string[]): Promise<Map<string, RouterPresence>> {
    if (routerIds.length === 0) return new Map();
    const found = await this.read((s) => s.routerPresence.of(routerIds));
    return new Map(found.map((p) => [p.routerId, p]));
  }
}
