import type { EdgeRouterState } from '@ziti/contracts';
import { edgeRouterBase } from '../read-models/entity-details.mapper.ts';

/**
 * A `currentIdentityEdgeRouterDetail` as the reference writes it (`current_identity_api_model.go
 * MapCurrentIdentityEdgeRouterToRestModel`): base fields, `hostname` always "", the router's state
 * (never connected to this controller yet: offline, `SYNC_UNKNOWN`, as `edgeRouterDetailOf`). The
 * reference leaves `cost`, `noTraversal` and `disabled` unset, i.e. null: the spec lets the first
 * two be null; `disabled` must be a boolean, so it is the router's own. No `appData` (omitempty).
 */
export function currentIdentityEdgeRouterDetail(r: EdgeRouterState) {
  return {
    ...edgeRouterBase(r),
    hostname: '',
    isOnline: false,
    name: r.name,
    supportedProtocols: r.supportedProtocols ?? {},
    syncStatus: 'SYNC_UNKNOWN',
    cost: null,
    noTraversal: null,
    disabled: r.disabled,
  };
}

/**
 * One of the client's `serviceEdgeRouters.edgeRouters` (`commonEdgeRouterProperties`, reference
 * `service_router.go getServiceEdgeRouters`): no id, no base fields; hostname and protocols are what
 * the router announced (none yet), offline, `SYNC_UNKNOWN`.
 */
export function serviceEdgeRouterDetail(r: EdgeRouterState) {
  return {
    hostname: r.hostname ?? '',
    isOnline: false,
    name: r.name,
    supportedProtocols: r.supportedProtocols ?? {},
    syncStatus: 'SYNC_UNKNOWN',
    cost: r.cost,
    noTraversal: r.noTraversal,
    disabled: r.disabled,
  };
}
