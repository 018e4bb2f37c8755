import { identityLinks } from '@ziti/contracts';
import type { IdentitySummary } from '@ziti/contracts';
import type { Enrollment } from '../shared/model.domain.ts';

/** Wire shape of an enrollment (ZITI-FACTS §12.7): the one place an enrollment is mapped domain → JSON. */
const ts = (d: Date) => d.toISOString();

export function enrollmentDetail(e: Enrollment, identity: IdentitySummary | undefined) {
  return {
    id: e.id,
    createdAt: ts(e.createdAt),
    updatedAt: ts(e.updatedAt),
    tags: e.tags,
    _links: { self: { href: `./enrollments/${e.id}` } },
    method: e.method,
    token: e.token,
    jwt: e.jwt,
    expiresAt: ts(e.expiresAt),
    ...(e.identityId
      ? {
          identityId: e.identityId,
          identity: {
            id: e.identityId,
            ...(identity ? { name: identity.name } : {}),
            entity: 'identities',
            _links: identityLinks(e.identityId, identity?.authPolicyId ?? 'default'),
          },
        }
      : {}),
    ...(e.edgeRouterId
      ? {
          edgeRouterId: e.edgeRouterId,
          edgeRouter: {
            id: e.edgeRouterId,
            entity: 'edge-routers',
            _links: { self: { href: `./edge-routers/${e.edgeRouterId}` } },
          },
        }
      : {}),
    ...(e.transitRouterId
      ? {
          transitRouterId: e.transitRouterId,
          transitRouter: {
            id: e.transitRouterId,
            entity: 'transit-routers',
            _links: { self: { href: `./transit-routers/${e.transitRouterId}` } },
          },
        }
      : {}),
    caId: e.caId,
    ...(e.username !== null ? { username: e.username } : {}),
  };
}
