import type { SessionUseVerdict } from '@ziti/contracts';
import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import { sameFingerprint } from '../routers/admission.domain.ts';

/** Why an edge request from a router was refused, as the router is told (ziti `handler_edge_ctrl/errors.go`). */
export interface EdgeRefusal {
  code:
    | 'invalidApiSession'
    | 'invalidSession'
    | 'wrongSessionType'
    | 'invalidEdgeRouterForSession'
    | 'invalidService'
    | 'invalidTerminator'
    | 'invalidCost'
    | 'encryptionDataMissing'
    | 'internal';
  message: string;
}

/** The refusal of each of policy's verdicts but `allowed`. */
export function refusalOf(outcome: Exclude<SessionUseVerdict['outcome'], 'allowed'>): EdgeRefusal {
  switch (outcome) {
    case 'invalidSession':
      return { code: 'invalidSession', message: 'invalid session' };
    case 'wrongSessionType':
      return { code: 'wrongSessionType', message: 'incorrect session type' };
    case 'invalidEdgeRouter':
      return { code: 'invalidEdgeRouterForSession', message: 'invalid edge router for session' };
    case 'invalidService':
      return { code: 'invalidService', message: 'invalid service' };
  }
}

/**
 * The SDK behind a bind or dial must hold a certificate of the session's API session (ziti
 * `checkSessionFingerprints`): one of the fingerprints the router saw is among the session's.
 */
export async function checkFingerprints(
  apiSessions: Pick<ApiSessionSync, 'session'>,
  session: { apiSessionId: string; identityId: string },
  presented: string[],
): Promise<EdgeRefusal | undefined> {
  const known = await apiSessions.session(session.apiSessionId, session.identityId);
  const found = known?.certFingerprints.some((f) => presented.some((p) => sameFingerprint(f, p))) ?? false;
  return found ? undefined : { code: 'invalidApiSession', message: 'invalid api session' };
}
