import { arraySet, baseEntityFields, defineQueryEntity, map, scalar } from '@ziti/zitiql';

const base = baseEntityFields;

/** The base fields as functions of the alias, without `isSystem` (auth policies, ext-JWT signers, the controller). */
const aliasedBase = {
  id: scalar((a) => `${a}.id`, 'string'),
  createdAt: scalar((a) => `${a}.created_at`, 'datetime'),
  updatedAt: scalar((a) => `${a}.updated_at`, 'datetime'),
  tags: map((a) => `${a}.tags`),
};

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

const primaryBool = (section: string, key: string) =>
  scalar((a) => `(${a}."primary"->'${section}'->>'${key}')::boolean`, 'boolean');
const primaryInt = (section: string, key: string) =>
  scalar((a) => `(${a}."primary"->'${section}'->>'${key}')::int`, 'number');

/** Auth policies, with the reference's dotted symbols for the policy sections (ZITI-FACTS §3.5). */
export const authPolicyQuery = defineQueryEntity({
  table: 'auth_policies',
  alias: 'p',
  fields: {
    ...aliasedBase,
    isSystem: scalar((a) => `${a}.is_system`, 'boolean'),
    name: scalar((a) => `${a}.name`, 'string'),
    'primary.cert.allowed': primaryBool('cert', 'allowed'),
    'primary.cert.allowExpiredCerts': primaryBool('cert', 'allowExpiredCerts'),
    'primary.updb.allowed': primaryBool('updb', 'allowed'),
    'primary.updb.minPasswordLength': primaryInt('updb', 'minPasswordLength'),
    'primary.updb.requireSpecialChar': primaryBool('updb', 'requireSpecialChar'),
    'primary.updb.requireNumberChar': primaryBool('updb', 'requireNumberChar'),
    'primary.updb.requireMixedCase': primaryBool('updb', 'requireMixedCase'),
    'primary.updb.maxAttempts': primaryInt('updb', 'maxAttempts'),
    'primary.updb.lockoutDurationMinutes': primaryInt('updb', 'lockoutDurationMinutes'),
    'primary.extJwt.allowed': primaryBool('extJwt', 'allowed'),
    'primary.extJwt.allowedSigners': arraySet(
      (a) =>
        `array(select jsonb_array_elements_text(coalesce(${a}."primary"->'extJwt'->'allowedSigners', '[]'::jsonb)))`,
      'string',
    ),
    'secondary.requireTotp': scalar((a) => `(${a}.secondary->>'requireTotp')::boolean`, 'boolean'),
    'secondary.requireExtJwtSigner': scalar((a) => `(${a}.secondary->>'requireExtJwtSigner')`, 'string'),
  },
});

/** External JWT signers. */
export const externalJwtSignerQuery = defineQueryEntity({
  table: 'external_jwt_signers',
  alias: 'j',
  fields: {
    ...aliasedBase,
    isSystem: scalar('false', 'boolean'),
    name: scalar((a) => `${a}.name`, 'string'),
    enabled: scalar((a) => `${a}.enabled`, 'boolean'),
    issuer: scalar((a) => `${a}.issuer`, 'string'),
    audience: scalar((a) => `${a}.audience`, 'string'),
    kid: scalar((a) => `${a}.kid`, 'string'),
    fingerprint: scalar((a) => `${a}.fingerprint`, 'string'),
    commonName: scalar((a) => `${a}.common_name`, 'string'),
    notBefore: scalar((a) => `${a}.not_before`, 'datetime'),
    notAfter: scalar((a) => `${a}.not_after`, 'datetime'),
    jwksEndpoint: scalar((a) => `${a}.jwks_endpoint`, 'string'),
    externalAuthUrl: scalar((a) => `${a}.external_auth_url`, 'string'),
    claimsProperty: scalar((a) => `${a}.claims_property`, 'string'),
    useExternalId: scalar((a) => `${a}.use_external_id`, 'boolean'),
    clientId: scalar((a) => `${a}.client_id`, 'string'),
    scopes: arraySet((a) => `${a}.scopes`, 'string'),
  },
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

/** The one controller record of `/controllers`, queried as a one-row record set. */
export const controllerQuery = defineQueryEntity({
  table: 'controllers_snapshot',
  alias: 'c',
  fields: {
    ...aliasedBase,
    isSystem: scalar('false', 'boolean'),
    name: scalar((a) => `${a}.name`, 'string'),
    fingerprint: scalar((a) => `${a}.fingerprint`, 'string'),
    isOnline: scalar((a) => `${a}.is_online`, 'boolean'),
    lastJoinedAt: scalar((a) => `${a}.last_joined_at`, 'datetime'),
    ctrlAddress: scalar((a) => `${a}.ctrl_address`, 'string'),
  },
});
