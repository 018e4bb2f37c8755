import type { RouterSyncStatus, RouterVersionInfo } from './fabric.ts';

/**
 * The part of an edge router's detail (spec `edgeRouterDetail`, ZITI-FACTS §12.2) that its state
 * and its presence decide, as both services that answer edge routers render it: inventory (the
 * owner, which adds the certificates and enrollment) and policy (the routers of a policy or a
 * service, read from its copy of the state).
 */
export interface EdgeRouterDetailSource {
  id: string;
  name: string;
  cost: number;
  noTraversal: boolean;
  disabled: boolean;
  appData: Record<string, unknown>;
  roleAttributes: string[];
  isVerified: boolean;
  isTunnelerEnabled: boolean;
  fingerprint: string | null;
}

/** The `versionInfo` of a router that never connected. */
export const noVersionInfo = { os: '', arch: '', version: '', revision: '', buildDate: '' };

/**
 * What a router's detail shows of its control channel (inventory's record of its presence,
 * `routerPresenceState`): `hostname` and `supportedProtocols` are "" and `{}` while it is offline,
 * `versionInfo` is the last one it announced.
 */
export interface RouterPresenceView {
  isOnline: boolean;
  hostname: string;
  supportedProtocols: Record<string, string>;
  versionInfo: RouterVersionInfo | null;
  syncStatus: RouterSyncStatus;
}

/** The presence of a router that never connected (the reference's `SYNC_UNKNOWN`). */
export const neverConnected: RouterPresenceView = {
  isOnline: false,
  hostname: '',
  supportedProtocols: {},
  versionInfo: null,
  syncStatus: 'SYNC_UNKNOWN',
};

/**
 * What router reads show of a router's recorded presence, as the reference shows it: while the
 * router is online, what it announced; once it is offline, exactly what a router that never
 * connected shows (the reference drops a disconnected router's state, ziti
 * `sync_strats/sync_instant.go RouterDisconnected`, and `rtx.go GetState` of a missing one answers
 * `env.NewRouterStatusValues`), whatever the record kept of its last connection (its version info,
 * `SYNC_DISCONNECTED`).
 */
export function presenceShown(p: RouterPresenceView | null | undefined): RouterPresenceView {
  if (!p?.isOnline) return neverConnected;
  return {
    isOnline: true,
    hostname: p.hostname,
    supportedProtocols: p.supportedProtocols,
    versionInfo: p.versionInfo,
    syncStatus: p.syncStatus,
  };
}

/** An edge router's `_links`. */
export function edgeRouterLinks(id: string): Record<string, { href: string }> {
  return {
    self: { href: `./edge-routers/${id}` },
    'edge-router-policies': { href: `./edge-routers/${id}/edge-router-policies` },
  };
}

/**
 * The detail's fields that the router's state and presence decide (no base fields, certificates or
 * enrollment); a router whose presence is not given shows as never connected.
 */
export function edgeRouterDetailFields(r: EdgeRouterDetailSource, presence: RouterPresenceView = neverConnected) {
  return {
    name: r.name,
    hostname: presence.hostname,
    isOnline: presence.isOnline,
    syncStatus: presence.syncStatus,
    supportedProtocols: presence.supportedProtocols,
    cost: r.cost,
    noTraversal: r.noTraversal,
    disabled: r.disabled,
    appData: r.appData,
    // none: null, as the reference reads an empty attribute list back (set to [] or never set)
    roleAttributes: r.roleAttributes.length > 0 ? r.roleAttributes : null,
    isVerified: r.isVerified,
    isTunnelerEnabled: r.isTunnelerEnabled,
    ...(r.fingerprint ? { fingerprint: r.fingerprint } : {}),
    versionInfo: versionInfoShown(presence.versionInfo),
  };
}

/** A router's `versionInfo` as its detail shows it: the last one it announced, else empty strings. */
export function versionInfoShown(v: RouterVersionInfo | null) {
  return { ...noVersionInfo, ...(v ?? {}) };
}
