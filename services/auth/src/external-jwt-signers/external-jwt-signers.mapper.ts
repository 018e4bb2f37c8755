import { ts } from '../shared/wire.mapper.ts';
import { type ExternalJwtSigner, defaultClaimsProperty } from './external-jwt-signer.domain.ts';

/** Go's zero time, for the date-time fields a JWKS signer (no certificate) does not have. */
const zeroTime = '0001-01-01T00:00:00.000Z';

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
