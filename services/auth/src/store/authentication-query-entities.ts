import { arraySet, defineQueryEntity, map, scalar } from '@ziti/zitiql';

const base = {
  id: scalar((a) => `${a}.id`, 'string'),
  createdAt: scalar((a) => `${a}.created_at`, 'datetime'),
  updatedAt: scalar((a) => `${a}.updated_at`, 'datetime'),
  tags: map((a) => `${a}.tags`),
};

const primaryBool = (section: string, key: string) =>
  scalar((a) => `(${a}."primary"->'${section}'->>'${key}')::boolean`, 'boolean');
const primaryInt = (section: string, key: string) =>
  scalar((a) => `(${a}."primary"->'${section}'->>'${key}')::int`, 'number');

/** Auth policies, with the reference's dotted symbols for the policy sections (ZITI-FACTS §3.5). */
export const authPolicyQuery = defineQueryEntity({
  table: 'auth_policies',
  alias: 'p',
  fields: {
    ...base,
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
    ...base,
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

/** The one controller record of `/controllers`, queried as a one-row record set. */
export const controllerQuery = defineQueryEntity({
  table: 'controllers_snapshot',
  alias: 'c',
  fields: {
    ...base,
    isSystem: scalar('false', 'boolean'),
    name: scalar((a) => `${a}.name`, 'string'),
    fingerprint: scalar((a) => `${a}.fingerprint`, 'string'),
    isOnline: scalar((a) => `${a}.is_online`, 'boolean'),
    lastJoinedAt: scalar((a) => `${a}.last_joined_at`, 'datetime'),
    ctrlAddress: scalar((a) => `${a}.ctrl_address`, 'string'),
  },
});
