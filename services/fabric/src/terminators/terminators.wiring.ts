import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { FabricWiringDeps } from '../shared/fabric-deps.wiring.ts';
import { BusSessionAuthority, BusTerminatorOwner } from './terminators.adapter.ts';
import { Terminators } from './terminators.domain.ts';

/** Terminators routers create for hosting identities: policy decides the session's use, inventory keeps them. */
export function terminatorsWiring(deps: FabricWiringDeps, apiSessions: ApiSessionSync) {
  const sessions = new BusSessionAuthority(deps.bus);
  const owner = new BusTerminatorOwner(deps.bus);
  return { sessions, owner, terminators: new Terminators(sessions, owner, apiSessions, deps.logger) };
}
