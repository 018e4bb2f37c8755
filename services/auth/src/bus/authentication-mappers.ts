import type { AuthPolicy } from '../domain/auth-policy.ts';
import type { ControllerRecord } from '../domain/controller-service.ts';
import { type ExternalJwtSigner, defaultClaimsProperty } from '../domain/ext-jwt-signer.ts';
import type { MfaRecord } from '../domain/mfa-service.ts';
import type { IdentityTrace } from '../domain/ports.ts';

/** Wire shapes of auth policies, external JWT signers, MFA, traces and controllers (ZITI-FACTS §9, §11, §12). */
const ts = (d: Date) => d.toISOString();
/** Go's zero time, for the date-time fields a JWKS signer (no certificate) does not have. */
const zeroTime = '0001-01-01T00:00:00.000Z';

export function authPolicyDetail(p: AuthPolicy) {
  return {
    id: p.id,
    createdAt: ts(p.createdAt),
    updatedAt: ts(p.updatedAt),
    tags: p.tags,
    _links: { self: { href: `./auth-policies/${p.id}` } },
    name: p.name,
    primary: {
      cert: { ...p.primary.cert },
      extJwt: { allowed: p.primary.extJwt.allowed, allowedSigners: [...p.primary.extJwt.allowedSigners] },
      updb: { ...p.primary.updb },
    },
    secondary: { requireTotp: p.secondary.requireTotp, requireExtJwtSigner: p.secondary.requireExtJwtSigner },
  };
}

/**
 * The management view of a signer. The spec requires every field as a non-null string; fields a
 * signer does not have (the certificate facts of a JWKS signer, an unset audience, …) go out as
 * empty strings and Go's zero time, so typed clients parse them; `claimsProperty` shows the claim
 * actually used (`sub` when unset).
 */
export function externalJwtSignerDetail(s: ExternalJwtSigner) {
  return {
    id: s.id,
    createdAt: ts(s.createdAt),
    updatedAt: ts(s.updatedAt),
    tags: s.tags,
    _links: { self: { href: `./external-jwt-signers/${s.id}` } },
    name: s.name,
    enabled: s.enabled,
    issuer: s.issuer,
    audience: s.audience ?? '',
    certPem: s.certPem,
    jwksEndpoint: s.jwksEndpoint,
    kid: s.kid ?? '',
    fingerprint: s.fingerprint ?? '',
    commonName: s.commonName ?? '',
    notBefore: s.notBefore ? ts(s.notBefore) : zeroTime,
    notAfter: s.notAfter ? ts(s.notAfter) : zeroTime,
    externalAuthUrl: s.externalAuthUrl ?? '',
    claimsProperty: s.claimsProperty ?? defaultClaimsProperty,
    useExternalId: s.useExternalId,
    clientId: s.clientId ?? '',
    scopes: [...s.scopes],
  };
}

/**
 * The client API's anonymous view (seed §2.11): name and `externalAuthUrl` beside the base entity
 * fields the spec requires (id, createdAt, updatedAt, _links).
 */
export function clientExternalJwtSignerDetail(s: ExternalJwtSigner) {
  return {
    id: s.id,
    createdAt: ts(s.createdAt),
    updatedAt: ts(s.updatedAt),
    _links: { self: { href: `./external-jwt-signers/${s.id}` } },
    name: s.name,
    externalAuthUrl: s.externalAuthUrl ?? '',
  };
}

function mfaBase(m: MfaRecord) {
  return { id: m.id, createdAt: ts(m.createdAt), updatedAt: ts(m.updatedAt), tags: m.tags };
}

/** `GET /current-identity/mfa`: the secret's URL and the recovery codes only while unverified (ZITI-FACTS §9.2). */
export function mfaDetail(m: MfaRecord, provisioningUrl: string) {
  const links: Record<string, { href: string }> = {
    self: { href: './current-identity/mfa' },
    'current-identity': { href: './current-identity' },
  };
  if (m.isVerified) {
    links['recovery-codes'] = { href: './current-identity/mfa/recovery-codes' };
    return { ...mfaBase(m), _links: links, isVerified: true };
  }
  links.verify = { href: './current-identity/mfa/verify' };
  links.qr = { href: './current-identity/mfa/qr-code' };
  return { ...mfaBase(m), _links: links, isVerified: false, provisioningUrl, recoveryCodes: [...m.recoveryCodes] };
}

export function mfaRecoveryCodesDetail(m: MfaRecord) {
  return {
    ...mfaBase(m),
    _links: { self: { href: './current-identity/mfa/recovery-codes' }, mfa: { href: './current-identity/mfa' } },
    recoveryCodes: [...m.recoveryCodes],
  };
}

export function traceDetail(t: IdentityTrace) {
  return t.enabled && t.until ? { enabled: true, traceId: t.traceId ?? '', until: ts(t.until) } : { enabled: false };
}

export function controllerDetail(c: ControllerRecord) {
  return {
    id: c.id,
    createdAt: ts(c.createdAt),
    updatedAt: ts(c.updatedAt),
    tags: {},
    _links: { self: { href: `./controllers/${c.id}` } },
    name: c.name,
    certPem: c.certPem,
    fingerprint: c.fingerprint,
    ctrlAddress: c.ctrlAddress,
    apiAddresses: c.apiAddresses,
    isOnline: c.isOnline,
    lastJoinedAt: ts(c.lastJoinedAt),
  };
}
