import type { Ca } from '../shared/model.domain.ts';

/** Wire shape of a CA (ZITI-FACTS §8.3): the one place a CA is mapped domain → JSON. */
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
