import { X509Certificate, createHash } from 'node:crypto';
import { ApiError, requireName } from '@ziti/contracts';

/** An external JWT signer (seed §2.11, §5.1): a certificate with its kid, or a JWKS endpoint. */
export interface ExternalJwtSigner {
  id: string;
  name: string;
  enabled: boolean;
  issuer: string;
  audience: string | null;
  certPem: string | null;
  /** Derived from `certPem`: lower-case hex SHA-1 of the DER, subject CN, validity. */
  fingerprint: string | null;
  commonName: string | null;
  notBefore: Date | null;
  notAfter: Date | null;
  kid: string | null;
  jwksEndpoint: string | null;
  /** The claim matched to the identity; `sub` when null. */
  claimsProperty: string | null;
  useExternalId: boolean;
  externalAuthUrl: string | null;
  clientId: string | null;
  scopes: string[];
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export const defaultClaimsProperty = 'sub';

/** What an administrator may set (create, replace or patch). */
export interface ExternalJwtSignerInput {
  name?: string | null;
  enabled?: boolean | null;
  issuer?: string | null;
  audience?: string | null;
  certPem?: string | null;
  kid?: string | null;
  jwksEndpoint?: string | null;
  claimsProperty?: string | null;
  useExternalId?: boolean | null;
  externalAuthUrl?: string | null;
  clientId?: string | null;
  scopes?: string[] | null;
  tags?: Record<string, unknown> | null;
}

const blankToNull = (v: string | null | undefined): string | null =>
  v === undefined || v === null || v.trim() === '' ? null : v.trim();

function httpUrl(field: string, value: string | null): string | null {
  if (value === null) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw ApiError.field(field, `${field} must be an absolute http or https URL`, value);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw ApiError.field(field, `${field} must be an absolute http or https URL`, value);
  return value;
}

interface CertFacts {
  fingerprint: string;
  commonName: string;
  notBefore: Date;
  notAfter: Date;
}

export function certificateFacts(certPem: string): CertFacts {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    throw ApiError.field('certPem', 'certPem is not a PEM encoded x509 certificate', '<pem>');
  }
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1] ?? '';
  return {
    fingerprint: createHash('sha1').update(cert.raw).digest('hex'),
    commonName: cn,
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
  };
}

/**
 * Applies create/replace/patch input to a signer (PATCH: an omitted field keeps, `null` clears) and
 * checks the result: name and issuer set, exactly one of `certPem` (with its `kid`) and
 * `jwksEndpoint`, URLs absolute http(s), the certificate parseable.
 */
export function applySignerInput(
  current: ExternalJwtSigner,
  input: ExternalJwtSignerInput,
  mode: 'create' | 'replace' | 'patch',
): ExternalJwtSigner {
  const has = (k: keyof ExternalJwtSignerInput) => mode !== 'patch' || Object.hasOwn(input, k);
  const next: ExternalJwtSigner = { ...current };
  if (has('name')) next.name = requireName(input.name);
  if (has('enabled')) next.enabled = input.enabled ?? false;
  if (has('issuer')) next.issuer = (input.issuer ?? '').trim();
  if (has('audience')) next.audience = blankToNull(input.audience);
  if (has('certPem')) next.certPem = blankToNull(input.certPem);
  if (has('kid')) next.kid = blankToNull(input.kid);
  if (has('jwksEndpoint')) next.jwksEndpoint = httpUrl('jwksEndpoint', blankToNull(input.jwksEndpoint));
  if (has('claimsProperty')) next.claimsProperty = blankToNull(input.claimsProperty);
  if (has('useExternalId')) next.useExternalId = input.useExternalId ?? false;
  if (has('externalAuthUrl')) next.externalAuthUrl = httpUrl('externalAuthUrl', blankToNull(input.externalAuthUrl));
  if (has('clientId')) next.clientId = blankToNull(input.clientId);
  if (has('scopes')) next.scopes = [...new Set((input.scopes ?? []).filter((s) => s.trim() !== ''))].sort();
  if (has('tags')) next.tags = input.tags ?? {};

  if (!next.issuer) throw ApiError.field('issuer', 'issuer in body is required', input.issuer);
  if (next.certPem && next.jwksEndpoint) {
    throw ApiError.field('jwksEndpoint', 'a signer has either certPem or jwksEndpoint, not both', next.jwksEndpoint);
  }
  if (!next.certPem && !next.jwksEndpoint) {
    throw ApiError.field('certPem', 'one of certPem or jwksEndpoint is required', '<nil>');
  }
  if (next.certPem) {
    if (!next.kid) throw ApiError.field('kid', 'kid is required with certPem', next.kid);
    Object.assign(next, certificateFacts(next.certPem));
  } else {
    Object.assign(next, { fingerprint: null, commonName: null, notBefore: null, notAfter: null });
  }
  return next;
}
