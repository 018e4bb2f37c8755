import { arraySet, baseEntityFields, defineQueryEntity, map, scalar } from '@ziti/zitiql';

const base = baseEntityFields;

/** Filterable fields of identities (ZITI-FACTS §3.5). */
export const identityQuery = defineQueryEntity({
  table: 'identities',
  alias: 'i',
  fields: {
    ...base('i'),
    name: scalar('i.name', 'string'),
    roleAttributes: arraySet('i.role_attributes', 'string'),
    externalId: scalar('i.external_id', 'string'),
    type: scalar('i.type_id', 'string'),
    authPolicyId: scalar('i.auth_policy_id', 'string'),
    isAdmin: scalar('i.is_admin', 'boolean'),
    isDefaultAdmin: scalar('i.is_default_admin', 'boolean'),
  },
});

/**
 * Authenticators. The reference also exposes `updbPassword` and `updbSalt` as filterable: we do not,
 * because filtering on a password hash is an oracle for it.
 */
export const authenticatorQuery = defineQueryEntity({
  table: 'authenticators',
  alias: 'a',
  fields: {
    ...base('a'),
    method: scalar('a.method', 'string'),
    certFingerprint: scalar('a.cert_fingerprint', 'string'),
    certPem: scalar('a.cert_pem', 'string'),
    updbUsername: scalar('a.username', 'string'),
    identity: scalar('a.identity_id', 'string'),
    'identity.name': scalar('(select x.name from identities x where x.id = a.identity_id)', 'string'),
  },
});

export const identityTypeQuery = defineQueryEntity({
  table: 'identity_types',
  alias: 't',
  // Identity types are fixed and carry no tags (no column): `tags.<key>` matches nothing instead of failing.
  fields: { ...base('t'), tags: map(`'{}'::jsonb`), name: scalar('t.name', 'string') },
});

/** API sessions live in Redis; they are filtered as a JSON record set in the auth database. */
export const apiSessionQuery = defineQueryEntity({
  table: 'api_sessions_snapshot',
  alias: 's',
  fields: {
    id: scalar('s.id', 'string'),
    createdAt: scalar('s.created_at', 'datetime'),
    updatedAt: scalar('s.updated_at', 'datetime'),
    tags: map('s.tags'),
    isSystem: scalar('false', 'boolean'),
    token: scalar('s.token', 'string'),
    identity: scalar('s.identity_id', 'string'),
    lastActivityAt: scalar('s.last_activity_at', 'datetime'),
    authenticator: scalar('s.authenticator_id', 'string'),
    ipAddress: scalar('s.ip_address', 'string'),
  },
});
