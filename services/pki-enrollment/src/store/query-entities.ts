import { arraySet, baseEntityFields, defineQueryEntity, scalar } from '@ziti/zitiql';

const base = baseEntityFields;

/** Filterable fields of CAs (ZITI-FACTS §3.5). */
export const caQuery = defineQueryEntity({
  table: 'cas',
  alias: 'c',
  fields: {
    ...base('c'),
    name: scalar('c.name', 'string'),
    fingerprint: scalar('c.fingerprint', 'string'),
    isVerified: scalar('c.is_verified', 'boolean'),
    verificationToken: scalar('c.verification_token', 'string'),
    isAutoCaEnrollmentEnabled: scalar('c.is_auto_ca_enrollment_enabled', 'boolean'),
    isOttCaEnrollmentEnabled: scalar('c.is_ott_ca_enrollment_enabled', 'boolean'),
    isAuthEnabled: scalar('c.is_auth_enabled', 'boolean'),
    identityRoles: arraySet('c.identity_roles', 'string'),
  },
});

/**
 * Enrollments: the reference's `identity`, `edgeRouter`, `transitRouter`, `caId`, plus `method` and
 * `expiresAt`. `token` is not filterable here: tokens are stored encrypted (only their hash is
 * indexed), and a filter on a secret would be an oracle for it anyway.
 */
export const enrollmentQuery = defineQueryEntity({
  table: 'enrollments',
  alias: 'e',
  fields: {
    ...base('e'),
    identity: scalar('e.identity_id', 'string'),
    edgeRouter: scalar('e.edge_router_id', 'string'),
    transitRouter: scalar('e.transit_router_id', 'string'),
    caId: scalar('e.ca_id', 'string'),
    method: scalar('e.method', 'string'),
    expiresAt: scalar('e.expires_at', 'datetime'),
  },
});

export const sessionCertificateQuery = defineQueryEntity({
  table: 'api_session_certificates',
  alias: 's',
  fields: {
    ...base('s'),
    fingerprint: scalar('s.fingerprint', 'string'),
    subject: scalar('s.subject', 'string'),
    validFrom: scalar('s.valid_from', 'datetime'),
    validTo: scalar('s.valid_to', 'datetime'),
  },
});
