import { ApiError, type CaState, type VerifyClientCertificateResult, caEventTypes, requireName } from '@ziti/contracts';
import { base62Uuid, shortId } from '@ziti/platform/ids';
import type { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import type { EnrollmentJwtIssuer } from '../enrollments/enrollment-jwt.domain.ts';
import { type ExternalIdClaimInput, assertExternalIdClaim, extractExternalId } from './external-id.domain.ts';
import {
  type Ca,
  DEFAULT_IDENTITY_NAME_FORMAT,
  type ExternalIdClaim,
  type ListInput,
  type ListPage,
} from '../shared/model.domain.ts';
import { type CertificateInfo, parsePemChain } from '@ziti/x509';
import { ChainVerificationError, verifyChain } from '@ziti/x509';
import type { PkiStores, UnitOfWork } from '../shared/stores.ports.ts';
import {
  MAX_CERT_PEM_BYTES,
  type TrustOutcome,
  presentedLeaf,
  tryVerifyPresentedChain,
} from '../shared/trust.domain.ts';

/** What an administrator may set on a CA (create, replace or patch; PATCH: null clears). */
export interface CaInput {
  name?: string | null;
  certPem?: string | null;
  isAutoCaEnrollmentEnabled?: boolean | null;
  isOttCaEnrollmentEnabled?: boolean | null;
  isAuthEnabled?: boolean | null;
  identityRoles?: string[] | null;
  identityNameFormat?: string | null;
  externalIdClaim?: ExternalIdClaimInput | null;
  tags?: Record<string, unknown> | null;
}

export function caState(ca: Ca): CaState {
  return {
    id: ca.id,
    name: ca.name,
    fingerprint: ca.fingerprint,
    certPem: ca.certPem,
    isVerified: ca.isVerified,
    isAuthEnabled: ca.isAuthEnabled,
    isAutoCaEnrollmentEnabled: ca.isAutoCaEnrollmentEnabled,
    isOttCaEnrollmentEnabled: ca.isOttCaEnrollmentEnabled,
    identityRoles: ca.identityRoles,
    createdAt: ca.createdAt.toISOString(),
    updatedAt: ca.updatedAt.toISOString(),
  };
}

/** CA identityRoles become identities' role attributes: the same rule applies (no `#`/`@` prefix). */
function assertIdentityRoles(values: string[] | null | undefined): string[] {
  const list = values ?? [];
  for (const v of list) {
    if (v.startsWith('#') || v.startsWith('@')) {
      throw ApiError.field('identityRoles', 'role attributes may not be prefixed with # or @', v);
    }
  }
  return [...new Set(list)].sort();
}

/** Parses a CA's certPem: the first certificate must be a CA (ZITI-FACTS §8.3). */
function parseCaCertificates(certPem: string | null | undefined): CertificateInfo[] {
  if (!certPem) throw ApiError.field('certPem', 'certPem in body is required', certPem);
  if (certPem.length > MAX_CERT_PEM_BYTES) throw ApiError.field('certPem', 'certPem is too large', '<pem>');
  let certs: CertificateInfo[];
  try {
    certs = parsePemChain(certPem);
  } catch (err) {
    throw ApiError.field(
      'certPem',
      `certPem could not be parsed: ${(err as ApiError).cause?.message ?? (err as Error).message}`,
      '<pem>',
    );
  }
  const first = certs[0];
  if (!first) throw ApiError.field('certPem', 'certPem contains no certificate', '<pem>');
  if (!first.isCa) {
    throw new ApiError('CERTIFICATE_IS_NOT_CA', {
      field: 'certPem',
      reason: 'certificate is not a CA',
      value: first.subject,
    });
  }
  return certs;
}

/**
 * Third-party CAs: administration, proof of possession (verify), the CA JWT, and which CA vouches
 * for a presented client certificate.
 */
export class CaService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly jwts: EnrollmentJwtIssuer,
    private readonly pki: ControllerPkiService,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async get(id: string): Promise<Ca> {
    return this.work((s) => this.load(s, id));
  }

  private async load(s: PkiStores, id: string, forUpdate = false): Promise<Ca> {
    const ca = await s.cas.get(id, { forUpdate });
    if (!ca) throw ApiError.notFound('ca', id);
    return ca;
  }

  async list(input: ListInput): Promise<ListPage<Ca>> {
    return this.work((s) => s.cas.list(input));
  }

  async create(input: CaInput): Promise<Ca> {
    const name = requireName(input.name);
    const certs = parseCaCertificates(input.certPem);
    const now = this.now();
    const ca: Ca = {
      id: base62Uuid(),
      name,
      fingerprint: certs[0]!.fingerprint,
      certPem: certs.map((c) => c.pem).join(''),
      isVerified: false,
      verificationToken: shortId(),
      isAutoCaEnrollmentEnabled: input.isAutoCaEnrollmentEnabled ?? false,
      isOttCaEnrollmentEnabled: input.isOttCaEnrollmentEnabled ?? false,
      isAuthEnabled: input.isAuthEnabled ?? false,
      identityRoles: assertIdentityRoles(input.identityRoles),
      identityNameFormat: input.identityNameFormat?.trim() || DEFAULT_IDENTITY_NAME_FORMAT,
      externalIdClaim: input.externalIdClaim ? assertExternalIdClaim(input.externalIdClaim) : null,
      tags: input.tags ?? {},
      createdAt: now,
      updatedAt: now,
    };
    return this.work(async (s) => {
      await s.cas.insert(ca);
      await s.events.emit(caEventTypes.caCreated, caState(ca));
      return ca;
    });
  }

  /** PUT replaces every updatable field (absent optional ones become empty); PATCH only those present. */
  async update(id: string, input: CaInput, mode: 'replace' | 'patch'): Promise<void> {
    const has = (k: keyof CaInput) => mode === 'replace' || Object.hasOwn(input, k);
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      const next: Ca = { ...current, updatedAt: this.now() };
      if (has('name')) next.name = requireName(input.name);
      if (has('isAutoCaEnrollmentEnabled')) next.isAutoCaEnrollmentEnabled = input.isAutoCaEnrollmentEnabled ?? false;
      if (has('isOttCaEnrollmentEnabled')) next.isOttCaEnrollmentEnabled = input.isOttCaEnrollmentEnabled ?? false;
      if (has('isAuthEnabled')) next.isAuthEnabled = input.isAuthEnabled ?? false;
      if (has('identityRoles')) next.identityRoles = assertIdentityRoles(input.identityRoles);
      if (has('identityNameFormat'))
        next.identityNameFormat = input.identityNameFormat?.trim() || DEFAULT_IDENTITY_NAME_FORMAT;
      if (mode === 'replace') {
        next.externalIdClaim = input.externalIdClaim ? assertExternalIdClaim(input.externalIdClaim) : null;
      } else if (input.externalIdClaim) {
        next.externalIdClaim = mergeClaim(current.externalIdClaim, input.externalIdClaim);
      }
      if (has('tags')) next.tags = input.tags ?? {};
      await s.cas.update(next);
      await s.events.emit(caEventTypes.caUpdated, caState(next));
    });
  }

  /** Deletes the CA (and its ottca enrollments); auth deletes the certificate authenticators it vouched for. */
  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      // Its ottca enrollments go with it, each announced (the foreign key would take them silently,
      // and auth's read model of outstanding enrollments would keep them).
      await s.enrollments.deleteByCa(id);
      await s.cas.delete(id);
      await s.events.emit(caEventTypes.caDeleted, caState({ ...current, updatedAt: this.now() }));
    });
  }

  /**
   * Proof of possession (ZITI-FACTS §8.3): a PEM certificate whose CN is the verification token,
   * signed by the CA.
   */
  async verify(id: string, certificatePem: string): Promise<void> {
    await this.work(async (s) => {
      // Locked like every read-modify-write (docs/adr/0018): a PATCH racing it would otherwise be undone.
      const ca = await this.load(s, id, true);
      if (ca.isVerified)
        throw new ApiError('CA_ALREADY_VERIFIED', {
          code: 'CA_ALREADY_VERIFIED',
          message: `ca ${id} is already verified`,
        });
      if (certificatePem.length > MAX_CERT_PEM_BYTES)
        throw new ApiError('COULD_NOT_PARSE_BODY', 'the certificate is too large');
      let certs: CertificateInfo[];
      try {
        certs = parsePemChain(certificatePem);
      } catch (err) {
        if (err instanceof ApiError) throw err; // COULD_NOT_PARSE_PEM_BLOCK, EXPECTED_PEM_CERTIFICATE, COULD_NOT_PARSE_DER_BLOCK
        throw new ApiError('COULD_NOT_PARSE_PEM_BLOCK', (err as Error).message);
      }
      const leaf = certs[0];
      if (!leaf) throw new ApiError('COULD_NOT_PARSE_PEM_BLOCK', 'the body holds no PEM certificate');
      if (leaf.commonName !== ca.verificationToken) {
        throw new ApiError('INVALID_COMMON_NAME', {
          code: 'INVALID_COMMON_NAME',
          message: `the common name ${leaf.commonName ?? '(none)'} is not the verification token of ca ${id}`,
        });
      }
      try {
        await verifyChain(leaf.pem, [], [ca.certPem], { at: this.now() });
      } catch (err) {
        if (!(err instanceof ChainVerificationError)) throw err;
        throw new ApiError('CERTIFICATE_FAILED_VALIDATION', {
          code: err.reason,
          message: err.cause?.message ?? err.message,
        });
      }
      const next: Ca = { ...ca, isVerified: true, updatedAt: this.now() };
      await s.cas.update(next);
      await s.events.emit(caEventTypes.caUpdated, caState(next));
    });
  }

  /** The CA's auto-enrollment JWT (returned whether or not auto-enrollment is on). */
  async jwt(id: string): Promise<string> {
    return this.jwts.caJwt(await this.get(id));
  }

  /** The first CA (oldest first) accepted by `accept` that the presented chain verifies to. */
  async findVouchingCa(
    chainPem: readonly string[],
    accept: (ca: Ca) => boolean,
    options: { tolerateExpiry?: boolean; anyUsage?: boolean } = {},
  ): Promise<{ ca: Ca; outcome: TrustOutcome } | undefined> {
    const candidates = (await this.work((s) => s.cas.all())).filter(accept);
    for (const ca of candidates) {
      const outcome = await tryVerifyPresentedChain(chainPem, ca.certPem, {
        ...(options.anyUsage ? {} : { usage: 'clientAuth' as const }),
        now: this.now(),
        ...(options.tolerateExpiry ? { tolerateExpiry: true } : {}),
      });
      if (outcome) return { ca, outcome };
    }
    return undefined;
  }

  /**
   * Whether a certificate an administrator registers as an identity's authenticator comes from a
   * known CA: the controller PKI or any verified CA (with or without isAuthEnabled), its validity
   * aside and whatever its key usage (the reference verifies it at its own notBefore with any usage).
   */
  async verifyAuthenticatorCertificate(chainPem: readonly string[]): Promise<VerifyClientCertificateResult> {
    const leaf = presentedLeaf(chainPem);
    if (!leaf) return { trusted: false, fingerprint: '' };
    const fingerprint = leaf.fingerprint;
    const controller = await tryVerifyPresentedChain(chainPem, this.pki.serverIdentity().caBundlePem, {
      tolerateExpiry: true,
      now: this.now(),
    });
    if (controller) return { trusted: true, issuer: 'controller', fingerprint, expired: controller.expired };
    const found = await this.findVouchingCa(chainPem, (ca) => ca.isVerified, { tolerateExpiry: true, anyUsage: true });
    if (!found) return { trusted: false, fingerprint };
    return {
      trusted: true,
      issuer: 'ca',
      caId: found.ca.id,
      isAuthEnabled: found.ca.isAuthEnabled,
      fingerprint,
      expired: found.outcome.expired,
    };
  }

  /**
   * Whom a TLS client certificate chain belongs to (for `method=cert`): the controller PKI, or a
   * verified CA with isAuthEnabled (with the external id its claim names). Never throws for a bad chain.
   */
  async verifyClientCertificate(chainPem: readonly string[]): Promise<VerifyClientCertificateResult> {
    const leaf = presentedLeaf(chainPem);
    if (!leaf) return { trusted: false, fingerprint: '' };
    const fingerprint = leaf.fingerprint;
    const controller = await tryVerifyPresentedChain(chainPem, this.pki.serverIdentity().caBundlePem, {
      usage: 'clientAuth',
      tolerateExpiry: true,
      now: this.now(),
    });
    if (controller) return { trusted: true, issuer: 'controller', fingerprint, expired: controller.expired };
    const found = await this.findVouchingCa(chainPem, (ca) => ca.isVerified && ca.isAuthEnabled, {
      tolerateExpiry: true,
    });
    if (!found) return { trusted: false, fingerprint };
    return {
      trusted: true,
      issuer: 'ca',
      caId: found.ca.id,
      isAuthEnabled: found.ca.isAuthEnabled,
      externalId: found.ca.externalIdClaim ? (extractExternalId(found.ca.externalIdClaim, leaf) ?? null) : null,
      fingerprint,
      expired: found.outcome.expired,
    };
  }
}

/** PATCH of externalIdClaim: present properties replace, the result must be a complete claim. */
function mergeClaim(current: ExternalIdClaim | null, patch: ExternalIdClaimInput): ExternalIdClaim {
  const merged: ExternalIdClaimInput = { ...(current ?? {}) };
  for (const [k, v] of Object.entries(patch) as [keyof ExternalIdClaimInput, unknown][]) {
    if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
  }
  return assertExternalIdClaim(merged);
}
