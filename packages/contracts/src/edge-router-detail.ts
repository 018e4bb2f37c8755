/**
 * The part of an edge router's detail (spec `edgeRouterDetail`, ZITI-FACTS §12.2) that its state
 * decides, as both services that answer edge routers render it: inventory (the owner, which adds the
 * certificates, version info and enrollment) and policy (the routers of a policy or a service, read
 * from its copy of the state). Routers do not hold a control channel to this controller yet, so every
 * router is offline and in the reference's "never connected" sync state.
 */
export interface EdgeRouterDetailSource {
  id: string;
  name: string;
  hostname: string;
  supportedProtocols: Record<string, string>;
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

/** An edge router's `_links`. */
export function edgeRouterLinks(id: string): Record<string, { href: string }> {
  return {
    self: { href: `./edge-routers/${id}` },
    'edge-router-policies': { href: `./edge-routers/${id}/edge-router-policies` },
  };
}

/** The detail's fields that the router's state decides (no base fields, certificates or enrollment). */
export function edgeRouterDetailFields(r: EdgeRouterDetailSource) {
  return {
    name: r.name,
    hostname: r.hostname,
    isOnline: false,
    syncStatus: 'SYNC_UNKNOWN',
    supportedProtocols: r.supportedProtocols,
    cost: r.cost,
    noTraversal: r.noTraversal,
    disabled: r.disabled,
    appData: r.appData,
    roleAttributes: r.roleAttributes,
    isVerified: r.isVerified,
    isTunnelerEnabled: r.isTunnelerEnabled,
    ...(r.fingerprint ? { fingerprint: r.fingerprint } : {}),
  };
}
