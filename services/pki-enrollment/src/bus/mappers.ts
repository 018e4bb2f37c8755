import { identityLinks } from '@ziti/contracts';
import type { IdentitySummary } from '@ziti/contracts';
import type { Ca, Enrollment, SessionCertificate } from '../domain/model.ts';

/** Wire shapes of pki-enrollment's entities (ZITI-FACTS §5.4, §8.3, §12.7): one place maps domain → JSON. */
const ts = (d: Date) => d.toISOString();

export function caLinks(
  ca: Pick<Ca, 'id' | 'isVerified' | 'isAutoCaEnrollmentEnabled'>,
): Record<string, { href: string }> {
  return {
    self: { href: `./cas/${ca.id}` },
    ...(ca.isVerified ? {} : { verify: { href: `./cas/${ca.id}/verify` } }),
    ...(ca.isAutoCaEnrollmentEnabled ? { jwt: { href: `./cas/${ca.id}/jwt` } } : {}),
  };
}

export function caRef(ca: Pick<Ca, 'id' | 'name' | 'isVerified' | 'isAutoCaEnrollmentEnabled'>) {
  return { id: ca.id, name: ca.name, entity: 'cas', _links: caLinks(ca) };
}

export function caDetail(ca: Ca) {
  return {
    id: ca.id,
    createdAt: ts(ca.createdAt),
    updatedAt: ts(ca.updatedAt),
    tags: ca.tags,
    _links: caLinks(ca),
    name: ca.name,
    fingerprint: ca.fingerprint,
    certPem: ca.certPem,
    isVerified: ca.isVerified,
    verificationToken: ca.verificationToken,
    isAutoCaEnrollmentEnabled: ca.isAutoCaEnrollmentEnabled,
    isOttCaEnrollmentEnabled: ca.isOttCaEnrollmentEnabled,
    isAuthEnabled: ca.isAuthEnabled,
    identityRoles: ca.identityRoles,
    identityNameFormat: ca.identityNameFormat,
    ...(ca.externalIdClaim ? { externalIdClaim: ca.externalIdClaim } : {}),
  };
}

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

export function sessionCertificateDetail(c: SessionCertificate) {
  return {
    id: c.id,
    createdAt: ts(c.createdAt),
    updatedAt: ts(c.updatedAt),
    tags: c.tags,
    _links: { self: { href: `./current-api-session/certificates/${c.id}` } },
    certificate: c.certPem,
    fingerprint: c.fingerprint,
    subject: c.subject,
    validFrom: ts(c.validFrom),
    validTo: ts(c.validTo),
  };
}
