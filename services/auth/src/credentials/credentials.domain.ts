import { type AuthenticatorFacts, emitAuthenticator } from '../shared/credential-events.domain.ts';
import { X509Certificate } from 'node:crypto';
import {
  ApiError,
  type CaState,
  type CreateAuthenticatorRequest,
  type CreateIdentityRequest,
  type CredentialAuthenticator,
  type IdentitySummary,
  type PendingEnrollment,
  eventTypes,
} from '@ziti/contracts';
import { shortId } from '@ziti/platform/ids';
import { assertPasswordMeetsPolicy, normalizePrimary } from '../auth-policies/auth-policy.domain.ts';
import { certificateFingerprint } from '../authenticators/authenticators.domain.ts';
import { assertRoleAttributes, defaultAuthPolicyId, identityState } from '../identities/identities.domain.ts';
import { type Authenticator, type Identity, newIdentity } from '../shared/model.domain.ts';
import { passwordLimits, usernameLimits } from '../passwords/password.domain.ts';
import type { AuthStores, SessionStore } from '../shared/stores.ports.ts';
import { SessionEnding } from '../api-sessions/session-ending.domain.ts';
import type { PasswordHasher } from '../passwords/passwords.ports.ts';

/** The certificate columns enrollment adds to an authenticator. */
export interface CertificateState {
  caId: string | null;
  unverifiedCertPem: string | null;
  unverifiedCertFingerprint: string | null;
}

export interface CredentialStore {
  certificateState(authenticatorId: string): Promise<CertificateState | null>;
  setCa(authenticatorId: string, caId: string | null): Promise<void>;
  stage(authenticatorId: string, certPem: string, fingerprint: string, at: Date): Promise<void>;
  /** Makes the staged certificate (whose fingerprint must be `fingerprint`) the current one. */
  promote(authenticatorId: string, fingerprint: string, at: Date): Promise<boolean>;
  idsIssuedBy(caId: string): Promise<string[]>;
  /** Certificate authenticators with no recorded CA, in id order after `afterId` (pages for a scan). */
  certificatesWithoutCa(afterId: string, limit: number): Promise<{ id: string; certPem: string }[]>;
  /** Deletes them; what each was (for its `authenticator.deleted`). */
  deleteMany(ids: string[]): Promise<AuthenticatorFacts[]>;
}

export type CredentialStores = AuthStores & { credentials: CredentialStore };
export type CredentialUnitOfWork = <T>(fn: (stores: CredentialStores) => Promise<T>) => Promise<T>;

/** What auth needs of pki-enrollment, which owns enrollments (identity create, identity detail). */
export interface EnrollmentPort {
  /** Creates the enrollments a new identity asks for; returns their ids. */
  createForIdentity(identityId: string, specs: EnrollmentRequestSpec[]): Promise<string[]>;
  /** Compensation: removes enrollments created for an identity that was not committed. */
  deleteForIdentity(identityId: string, ids: string[]): Promise<void>;
  /** Outstanding enrollments per identity id. */
  pendingFor(identityIds: string[]): Promise<Record<string, PendingEnrollment[]>>;
}

export interface EnrollmentRequestSpec {
  method: 'ott' | 'ottca' | 'updb';
  caId?: string;
  username?: string;
}

const MAX_NAME_ATTEMPTS = 1000;

/** A leaf certificate issued by one of a CA bundle's certificates (signature checked). */
function issuedByAny(certPem: string, issuers: X509Certificate[]): boolean {
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certPem);
  } catch {
    return false;
  }
  return issuers.some((ca) => {
    try {
      return leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
    } catch {
      return false;
    }
  });
}

function caCertificates(certPem: string): X509Certificate[] {
  const blocks = certPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.flatMap((b) => {
    try {
      return [new X509Certificate(b)];
    } catch {
      return [];
    }
  });
}

/**
 * Credentials that pki-enrollment's flows produce or change (ZITI-FACTS §8): authenticators from
 * enrollment, certificate extension, re-enrollment, identities of CA auto-enrollment, and the
 * clean-up when a CA goes. Served to pki-enrollment over the bus (`shared/calls.transport.ts`).
 */
export class CredentialService {
  private readonly ending: SessionEnding;

  constructor(
    private readonly work: CredentialUnitOfWork,
    private readonly hasher: PasswordHasher,
    sessions: Pick<SessionStore, 'endByIdentity' | 'forget'>,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.ending = new SessionEnding(sessions, now);
  }

  private async loadIdentity(s: CredentialStores, id: string): Promise<Identity> {
    const identity = await s.identities.get(id);
    if (!identity) throw ApiError.notFound('identity', id);
    return identity;
  }

  /**
   * An authenticator obtained by enrollment: `cert` (ott's signed CSR, ottca's presented
   * certificate, with the CA it came through) or `updb` (the enrollment's username and the
   * chosen password, which must meet the identity's auth policy).
   */
  async createAuthenticator(input: CreateAuthenticatorRequest): Promise<{ id: string }> {
    const now = this.now();
    const a: Authenticator = {
      id: shortId(),
      identityId: input.identityId,
      method: input.method,
      username: null,
      passwordHash: null,
      salt: null,
      certFingerprint: null,
      certPem: null,
      tags: {},
      createdAt: now,
      updatedAt: now,
    };
    if (input.method === 'updb') {
      const username = input.username ?? '';
      const password = input.password ?? '';
      if (username.length < usernameLimits.min || username.length > usernameLimits.max) {
        throw ApiError.field(
          'username',
          `username must be ${usernameLimits.min}..${usernameLimits.max} characters long`,
          username,
        );
      }
      if (!password) throw ApiError.field('password', 'password in body is required', '');
      if (password.length > passwordLimits.max)
        throw ApiError.field('password', `password in body should be at most ${passwordLimits.max} chars long`, '***');
      const policy = await this.work(async (s) => {
        const identity = await this.loadIdentity(s, input.identityId);
        return s.authPolicies.get(identity.authPolicyId);
      });
      assertPasswordMeetsPolicy(password, normalizePrimary(policy?.primary).updb);
      const hashed = await this.hasher.hash(password);
      a.username = username;
      a.passwordHash = hashed.hash;
      a.salt = hashed.salt;
    } else {
      if (!input.certPem) throw ApiError.field('certPem', 'certPem is required', input.certPem);
      a.certPem = input.certPem;
      a.certFingerprint = certificateFingerprint(input.certPem);
    }
    return this.work(async (s) => {
      await this.loadIdentity(s, a.identityId);
      if ((await s.authenticators.listByIdentity(a.identityId)).some((e) => e.method === a.method)) {
        throw new ApiError('MAX_AUTHENTICATOR_METHODS_REACHED', {
          field: 'method',
          reason: `identity already has a ${a.method} authenticator`,
          value: a.method,
        });
      }
      await s.authenticators.insert(a);
      if (input.caId) await s.credentials.setCa(a.id, input.caId);
      await emitAuthenticator(s.events, 'authenticatorCreated', a);
      return { id: a.id };
    });
  }

  async getAuthenticator(id: string): Promise<CredentialAuthenticator> {
    return this.work(async (s) => {
      const a = await s.authenticators.get(id);
      const state = a ? await s.credentials.certificateState(id) : null;
      if (!a || !state) throw ApiError.notFound('authenticator', id);
      return {
        id: a.id,
        identityId: a.identityId,
        method: a.method,
        username: a.username,
        certFingerprint: a.certFingerprint,
        certPem: a.certPem,
        unverifiedCertPem: state.unverifiedCertPem,
        unverifiedCertFingerprint: state.unverifiedCertFingerprint,
        caId: state.caId,
      };
    });
  }

  private async ownCert(s: CredentialStores, authenticatorId: string, identityId: string): Promise<Authenticator> {
    const a = await s.authenticators.get(authenticatorId);
    if (!a || a.identityId !== identityId) throw ApiError.notFound('authenticator', authenticatorId);
    if (a.method !== 'cert') {
      throw new ApiError('CAN_NOT_UPDATE_AUTHENTICATOR', {
        code: 'CAN_NOT_UPDATE_AUTHENTICATOR',
        message: 'only certificate authenticators hold certificates',
      });
    }
    return a;
  }

  /** Extension: the new certificate waits beside the current one, which stays valid. */
  async stageCertificate(input: { authenticatorId: string; identityId: string; certPem: string }): Promise<void> {
    const fingerprint = certificateFingerprint(input.certPem);
    await this.work(async (s) => {
      await this.ownCert(s, input.authenticatorId, input.identityId);
      await s.credentials.stage(input.authenticatorId, input.certPem, fingerprint, this.now());
    });
  }

  /** Extension verified: the staged certificate becomes the only valid one. */
  async replaceCertificate(input: { authenticatorId: string; identityId: string; fingerprint: string }): Promise<void> {
    await this.work(async (s) => {
      await this.ownCert(s, input.authenticatorId, input.identityId);
      if (!(await s.credentials.promote(input.authenticatorId, input.fingerprint, this.now()))) {
        throw new ApiError('INVALID_CLIENT_CERT', {
          code: 'INVALID_CLIENT_CERT',
          message: 'the certificate is not the one waiting for verification',
        });
      }
      const promoted = await s.authenticators.get(input.authenticatorId);
      if (promoted) await emitAuthenticator(s.events, 'authenticatorUpdated', promoted);
    });
  }

  /**
   * Re-enrollment (its one caller) turns the authenticator back into an enrollment: it goes, and
   * with it every API session made with it.
   */
  async deleteAuthenticator(id: string): Promise<void> {
    const found = await this.work((s) => s.authenticators.get(id));
    if (!found) throw ApiError.notFound('authenticator', id);
    const scope = { identityId: found.identityId, authenticatorId: id };
    await this.ending.around(this.work, scope, 'authenticatorReEnrolled', async (s) => {
      const current = await s.authenticators.get(id, { forUpdate: true });
      if (!current || !(await s.authenticators.delete(id))) throw ApiError.notFound('authenticator', id);
      await emitAuthenticator(s.events, 'authenticatorDeleted', current);
    });
  }

  async identities(ids: string[]): Promise<IdentitySummary[]> {
    return this.work(async (s) => {
      const out: IdentitySummary[] = [];
      for (const id of new Set(ids)) {
        const i = await s.identities.get(id);
        if (i) out.push({ id: i.id, name: i.name, authPolicyId: i.authPolicyId });
      }
      return out;
    });
  }

  /**
   * CA auto-enrollment: a Default identity with the CA's roles, named as asked (a 6-digit counter
   * appended on a collision), with its certificate authenticator or its external id, in one
   * transaction (a certificate already in use leaves nothing behind: CERT_IN_USE).
   */
  async createIdentity(input: CreateIdentityRequest): Promise<{ id: string; name: string }> {
    const now = this.now();
    const roleAttributes = assertRoleAttributes('roleAttributes', input.roleAttributes);
    const fingerprint = input.certPem ? certificateFingerprint(input.certPem) : null;
    return this.work(async (s) => {
      let name: string | undefined;
      for (let i = 0; i < MAX_NAME_ATTEMPTS && name === undefined; i++) {
        const candidate = i === 0 ? input.name : `${input.name}${String(i).padStart(6, '0')}`;
        if (!(await s.identities.findByName(candidate))) name = candidate;
      }
      if (name === undefined) throw ApiError.field('name', `no free identity name for ${input.name}`, input.name);
      const identity = newIdentity({
        id: input.id,
        name,
        roleAttributes,
        externalId: input.externalId ?? null,
        authPolicyId: defaultAuthPolicyId,
        createdAt: now,
      });
      await s.identities.insert(identity);
      if (input.certPem && fingerprint) {
        const a: Authenticator = {
          id: shortId(),
          identityId: identity.id,
          method: 'cert',
          username: null,
          passwordHash: null,
          salt: null,
          certFingerprint: fingerprint,
          certPem: input.certPem,
          tags: {},
          createdAt: now,
          updatedAt: now,
        };
        await s.authenticators.insert(a);
        if (input.caId) await s.credentials.setCa(a.id, input.caId);
        await emitAuthenticator(s.events, 'authenticatorCreated', a);
      }
      await s.events.emit(eventTypes.identityCreated, identityState(identity));
      return { id: identity.id, name };
    });
  }

  /**
   * A CA was deleted: the certificate authenticators it vouched for go too — those recorded with
   * it, and those without a recorded CA whose certificate it signed. Runs in the consumer's transaction.
   */
  async deleteCertificatesOfCa(
    s: Pick<CredentialStores, 'credentials' | 'events'>,
    ca: Pick<CaState, 'id' | 'certPem'>,
  ): Promise<number> {
    const issuers = caCertificates(ca.certPem);
    const doomed = await s.credentials.idsIssuedBy(ca.id);
    let after = '';
    for (;;) {
      const page = await s.credentials.certificatesWithoutCa(after, 500);
      for (const c of page) if (issuedByAny(c.certPem, issuers)) doomed.push(c.id);
      if (page.length < 500) break;
      after = page[page.length - 1]!.id;
    }
    const deleted = await s.credentials.deleteMany(doomed);
    for (const a of deleted) {
      await emitAuthenticator(s.events, 'authenticatorDeleted', a);
      await this.ending.within(s.events, { identityId: a.identityId, authenticatorId: a.id }, 'authenticatorDeleted');
    }
    return deleted.length;
  }
}
