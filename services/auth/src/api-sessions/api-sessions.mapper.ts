import { identityLinks } from '@ziti/contracts';
import type { AuthQuery } from '@ziti/contracts';
import { type LiveApiSession, pendingAuthQueries } from '@ziti/platform';
import { identityRef } from '../identities/identities.mapper.ts';
import type { Identity } from '../shared/model.domain.ts';

export function apiSessionDetail(
  s: LiveApiSession,
  identity: Pick<Identity, 'id' | 'name' | 'authPolicyId'> | undefined,
) {
  return {
    id: s.id,
    createdAt: s.createdAt,
    updatedAt: s.lastActivityAt,
    tags: s.tags,
    _links: { self: { href: `./api-sessions/${s.id}` }, sessions: { href: `./api-sessions/${s.id}/sessions` } },
    token: s.token,
    identityId: s.identityId,
    identity: identity
      ? identityRef(identity)
      : {
          id: s.identityId,
          name: s.identityName,
          entity: 'identities',
          _links: identityLinks(s.identityId, 'default'),
        },
    authenticatorId: s.authenticatorId,
    configTypes: s.configTypes,
    ipAddress: s.ipAddress,
    isMfaRequired: s.isMfaRequired,
    isMfaComplete: s.isMfaComplete,
    // Management listings cannot know a request's bearer token: only the MFA factor shows here.
    authQueries: pendingAuthQueries(s, true),
    lastActivityAt: s.lastActivityAt,
    cachedLastActivityAt: s.lastActivityAt,
  };
}

/** The current session, with the secondary factors still pending for this request. */
export function currentApiSessionDetail(
  s: LiveApiSession,
  identity: Identity,
  ttlSeconds: number,
  authQueries: AuthQuery[],
) {
  return { ...apiSessionDetail(s, identity), authQueries, expiresAt: s.expiresAt, expirationSeconds: ttlSeconds };
}
