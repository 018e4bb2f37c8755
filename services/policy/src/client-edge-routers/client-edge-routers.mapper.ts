import { edgeRouterBase } from '../read-models/entity-details.mapper.ts';
import { presenceShown } from '@ziti/contracts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';

/**
 * A `currentIdentityEdgeRouterDetail` as the reference writes it (`current_identity_api_model.go
 * MapCurrentIdentityEdgeRouterToRestModel`): base fields, `hostname` always "" (the reference sets a
 * local `hostname := ""`, never the router's), and from the router's state (`presenceShown`)
 * `isOnline`, `supportedProtocols` and `syncStatus`. The reference leaves `cost`, `noTraversal` and
 * `disabled` unset, i.e. null: the spec lets the first two be null; `disabled` must be a boolean, so
 * it is the router's own. No `appData` (omitempty).
 */
export function currentIdentityEdgeRouterDetail(r: EdgeRouterWithPresence) {
  const presence = presenceShown(r.presence);
  return {
    ...edgeRouterBase(r),
    hostname: '',
    isOnline: presence.isOnline,
    name: r.name,
    supportedProtocols: presence.supportedProtocols,
    syncStatus: presence.syncStatus,
    cost: null,
    noTraversal: null,
    disabled: r.disabled,
  };
}

/**
 * One of the client's `serviceEdgeRouters.edgeRouters` (`commonEdgeRouterProperties`, reference
 * `service_router.go getServiceEdgeRouters`): no id, no base fields; `hostname`, `isOnline`,
 * `supportedProtocols` and `syncStatus` from the router's state (`presenceShown`: what an
 * online router announced; an offline one shows none).
 */
export function serviceEdgeRouterDetail(r: EdgeRouterWithPresence) {
  const presence = presenceShown(r.presence);
  return {
    hostname: presence.hostname,
    isOnline: presence.isOnline,
    name: r.name,
    supportedProtocols: presence.supportedProtocols,
    syncStatus: presence.syncStatus,
    cost: r.cost,
    noTraversal: r.noTraversal,
    disabled: r.disabled,
  };
}
