import type { SessionUseVerdict } from '@ziti/contracts';
import type { SessionType } from './sessions.domain.ts';
import type { SessionUseFacts, SessionWork } from './sessions.ports.ts';

/** An edge session a router was handed for a Bind (CreateTerminatorV2) or a Dial (CreateCircuitV2). */
export interface SessionUseRequest {
  token: string;
  type: SessionType;
  routerId: string;
}

/**
 * May the session be used through this router now? The reference's checks of a router's
 * CreateTerminatorV2 and CreateCircuitV2 (ziti `controller/handler_edge_ctrl/common.go`,
 * `create_terminator_v2.go`, `create_circuit.go`), and what this controller adds because its
 * sessions outlive the facts they were created from (step 3):
 *
 * 1. `loadSession`: no session has the token → `invalidSession`. So is a session whose API session
 *    has ended, or whose identity is gone: the reference deletes those sessions with their API
 *    session (an identity's deletion takes its API sessions), here the end may still be on its way.
 * 2. `checkSessionType`: a Bind used to dial, or a Dial to bind → `wrongSessionType`.
 *    (`checkSessionFingerprints` comes next in the reference: fabric checks it, it holds the certificates.)
 * 3. The service is gone (`loadService`), or the identity may no longer dial (or bind) it →
 *    `invalidService`. The reference never gets this far with either: it deletes a service's
 *    sessions with the service, and its service-policy enforcer deletes the sessions of an identity
 *    that lost the access (`internal/policy/service_policy_enforcer.go`; administrators spared, as
 *    here), so their next use fails at step 1. Sessions here outlive both, so both are checked,
 *    and before the router: the links of a deleted service are gone too, which would otherwise
 *    name the router as the cause.
 * 4. `verifyIdentityEdgeRouterAccess` (`IsAccessToEdgeRouterAllowed(identity, service, router)`): the
 *    identity reaches the router through an edge-router policy and the service through a
 *    service-edge-router policy, both now → else `invalidEdgeRouter`.
 *
 * Posture is not checked again: the reference checks it when the session is created.
 */
export function sessionUseVerdict(facts: SessionUseFacts | undefined, type: SessionType): SessionUseVerdict {
  if (!facts || facts.apiSessionEnded || !facts.identityLive) return { outcome: 'invalidSession' };
  if (facts.session.type !== type) return { outcome: 'wrongSessionType' };
  if (!facts.serviceLive || (!facts.typePermitted && !facts.identityIsAdmin)) return { outcome: 'invalidService' };
  if (!facts.identityReachesRouter || !facts.serviceReachesRouter) return { outcome: 'invalidEdgeRouter' };
  const { id, apiSessionId, identityId, serviceId } = facts.session;
  return { outcome: 'allowed', session: { id, apiSessionId, identityId, serviceId, type: facts.session.type } };
}

/** `fabric.authorizeSessionUse`: the facts in one read (one statement), the verdict decided here. */
export class SessionUseAuthority {
  constructor(private readonly read: SessionWork) {}

  async authorize(request: SessionUseRequest): Promise<SessionUseVerdict> {
    const facts = await this.read((s) => s.useFacts(request.token, request.routerId));
    return sessionUseVerdict(facts, request.type);
  }
}
