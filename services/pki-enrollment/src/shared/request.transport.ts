import type { OperationRequest } from '@ziti/contracts';
import { callerOf } from '@ziti/platform';
import type { SessionOwner } from '../session-certificates/session-certificates.domain.ts';

// Readers of an operation request that several of pki-enrollment's transports use.

/** The caller's identity and API session; UNAUTHORIZED without one. */
export function owner(req: OperationRequest): SessionOwner {
  const { identityId, apiSessionId } = callerOf(req);
  return { identityId, apiSessionId };
}
