import { identityLinks } from '@ziti/contracts';
import { identityRef } from '../identities/identities.mapper.ts';
import type { Authenticator, Identity } from '../shared/model.domain.ts';
import { ts } from '../shared/wire.mapper.ts';

export function authenticatorDetail(
  a: Authenticator,
  identity: Pick<Identity, 'id' | 'name' | 'authPolicyId'> | undefined,
) {
  return {
    id: a.id,
    createdAt: ts(a.createdAt),
    updatedAt: ts(a.updatedAt),
    tags: a.tags,
    _links: { self: { href: `./authenticators/${a.id}` }, identities: { href: `./identities/${a.identityId}` } },
    method: a.method,
    identityId: a.identityId,
    identity: identity
      ? identityRef(identity)
      : { id: a.identityId, entity: 'identities', _links: identityLinks(a.identityId, 'default') },
    ...(a.method === 'updb' ? { username: a.username ?? '' } : {}),
    ...(a.method === 'cert' ? { certPem: a.certPem ?? '', fingerprint: a.certFingerprint ?? '' } : {}),
  };
}
