import type { SessionCertificate } from '../shared/model.domain.ts';

/** Wire shape of an API session certificate (`_links` as ZITI-FACTS §5.4): the one place one is mapped domain → JSON. */
const ts = (d: Date) => d.toISOString();

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
