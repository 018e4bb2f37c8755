import { X509Certificate, createHash, randomUUID } from 'node:crypto';
import { ApiError, type AuthQuery, type VerifyClientCertificateResult, eventTypes } from '@ziti/contracts';
import {
  type ApiSessionRecord,
  type ExtJwtSecondaryRequest,
  type ExtJwtSecondaryResult,
  type LiveApiSession,
  liveSession,
  pendingAuthQueries,
} from '@ziti/platform/sessions/api-session-store';
import { cuid } from '@ziti/platform/ids';
import { emitApiSessionDeleted } from './api-session-events.ts';
import { identityState } from './identity-service.ts';
import { type AuthPolicy, allowsSigner, defaultAuthPolicyId } from './auth-policy.ts';
import { ExtJwtRejected, type SignerKeys, verifyExternalJwt } from './ext-jwt.ts';
import type { ExternalJwtSigner } from './ext-jwt-signer.ts';
import type { Identity, ListInput, ListPage } from './model.ts';
import { isDisabled } from './model.ts';
import type { ApiSessionQuery, AuthStores, PasswordHasher, SessionStore, UnitOfWork } from './ports.ts';
import { type SecondaryFactors, factorsOfPolicy, requiredSignerOf } from './session-factors.ts';

export interface AuthenticateInput {
  method: string;
  username?: string;
  password?: string;
  configTypes?: string[];
  envInfo?: Record<string, unknown>;
  sdkInfo?: Record<string, unknown>;
  remoteAddress: string;
  /** The TLS client certificate chain, leaf first (method `cert`). */
  clientCertChain?: string[];
  /** The `Authorization` header (method `ext-jwt`, and the secondary external JWT). */
  authorization?: string;
}

/** What a new API session is made from, read with its identity. */
interface SessionContext {
  factors: SecondaryFactors;
  mfaVerified: boolean;
  requiredSigner: ExternalJwtSigner | null;
}

export interface AuthenticatedSession {
  session: LiveApiSession;
  identity: Identity;
  /** The secondary factors still pending for this session (empty: fully authenticated). */
  authQueries: AuthQuery[];
}

/** Port: who vouches for a TLS client certificate. */
export interface ClientCertificateTrust {
  /** The controller PKI's CA certificates (PEM), the roots of controller-issued certificates. */
  controllerCaBundle(): Promise<string[]>;
  /** pki-enrollment's verdict on a chain (third-party CAs); null when it can not answer. */
  verifyWithPki(chainPem: string[]): Promise<VerifyClientCertificateResult | null>;
}

/** Certificate path validation; throws when `leaf` does not chain to one of `roots` at `at`. */
export type ChainVerifier = (
  leafPem: string,
  intermediatesPem: string[],
  rootsPem: string[],
  options: { at: Date; usage: 'clientAuth' },
) => Promise<unknown>;

export interface AuthenticationDeps {
  work: UnitOfWork;
  /** Stores outside a transaction, for reads on the request path (defaults to `work`). */
  read?: UnitOfWork;
  sessions: SessionStore;
  hasher: PasswordHasher;
  sessionQuery: ApiSessionQuery;
  sessionTtlSeconds: number;
  signerKeys: SignerKeys;
  certificates: ClientCertificateTrust;
  verifyChain: ChainVerifier;
  /** Disables an identity for `minutes` (0 = until enabled) and ends its sessions (updb lockout). */
  lockout: (identityId: string, minutes: number) => Promise<void>;
  /** Why an authentication was refused; the client only ever sees INVALID_AUTH. */
  onRefused?: (reason: string, detail: Record<string, unknown>) => void;
  now?: () => Date;
}

/** How long the gateway may reuse a positive secondary external-JWT answer at most. */
const secondaryAnswerTtlMs = 60_000;

export function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
}

/** Lower-case hex SHA-1 of a certificate's DER, the reference's fingerprint; null when unparseable. */
function certificateOf(pem: string): { cert: X509Certificate; fingerprint: string } | null {
  try {
    const cert = new X509Certificate(pem);
    return { cert, fingerprint: createHash('sha1').update(cert.raw).digest('hex') };
  } catch {
    return null;
  }
}

/**
 * Primary authentication (password, certificate, external JWT), the API sessions it opens, and
 * the secondary external-JWT check the gateway asks for. Every refusal is INVALID_AUTH; the
 * reason goes to `onRefused` (the log), never to the client.
 */
export class AuthenticationService {
  readonly sessionTtlSeconds: number;
  private readonly now: () => Date;
  /** What a login with no usable password is checked against (made once, same hasher and parameters). */
  private dummyCredential?: Promise<{ hash: string; salt: string }>;

  private readonly reader: UnitOfWork;

  constructor(private readonly deps: AuthenticationDeps) {
    this.sessionTtlSeconds = deps.sessionTtlSeconds;
    this.now = deps.now ?? (() => new Date());
    this.reader = deps.read ?? deps.work;
  }

  private refuse(reason: string, detail: Record<string, unknown> = {}): never {
    this.deps.onRefused?.(reason, detail);
    throw new ApiError('INVALID_AUTH');
  }

  async authenticate(input: AuthenticateInput): Promise<AuthenticatedSession> {
    switch (input.method) {
      case 'password':
        return this.withPassword(input);
      case 'cert':
        return this.withCertificate(input);
      case 'ext-jwt':
        return this.withExternalJwt(input);
      default:
        throw new ApiError('INVALID_AUTH_METHOD', {
          field: 'method',
          reason: `unknown authentication method ${input.method}`,
          value: input.method,
        });
    }
  }

  // ---------------------------------------------------------------------------------- password

  private async withPassword(input: AuthenticateInput): Promise<AuthenticatedSession> {
    if (!input.username || !input.password) {
      throw new ApiError('COULD_NOT_VALIDATE', {
        field: input.username ? 'password' : 'username',
        reason: 'username and password fields are required',
      });
    }
    const password = input.password;
    // Reads only, in one statement outside a transaction; an unknown username reads the default
    // policy too, so both cost the same until the hash.
    const found = await this.reader((s) => s.authenticators.findPasswordLogin(input.username!, defaultAuthPolicyId));
    const { authenticator, identity, policy } = found;
    if (!authenticator || !identity || !authenticator.passwordHash || !authenticator.salt) {
      await this.verifyDummy(password);
      return this.refuse('UNKNOWN_USERNAME');
    }
    if (policy && !policy.primary.updb.allowed) {
      await this.verifyDummy(password);
      return this.refuse('UPDB_NOT_ALLOWED', { identityId: identity.id, authPolicyId: policy.id });
    }
    if (!(await this.deps.hasher.verify(password, authenticator.passwordHash, authenticator.salt))) {
      await this.countFailure(identity, authenticator.id, policy);
      return this.refuse('WRONG_PASSWORD', { identityId: identity.id });
    }
    // After the password: the failure count goes (a write only when the policy counts failures).
    if (policy !== null && policy.primary.updb.maxAttempts > 0) {
      await this.deps.work((s) => s.loginAttempts.reset(authenticator.id));
    }
    // The policy's factors need a read only when it requires an external JWT signer.
    const requiredSigner = policy?.secondary.requireExtJwtSigner
      ? await this.reader((s) => requiredSignerOf(s, policy))
      : null;
    const context: SessionContext = {
      factors: factorsOfPolicy(policy, requiredSigner),
      mfaVerified: found.mfaVerified,
      requiredSigner,
    };
    return this.openSession(identity, authenticator.id, 'password', input, null, context);
  }

  /**
   * A full verification against a dummy credential of the same hasher, for a login that has no
   * password to check: an unknown username costs what a known one does, so timing does not tell
   * which usernames exist.
   */
  private async verifyDummy(password: string): Promise<void> {
    this.dummyCredential ??= this.deps.hasher.hash(randomUUID()).catch((err: unknown) => {
      this.dummyCredential = undefined;
      throw err;
    });
    const { hash, salt } = await this.dummyCredential;
    await this.deps.hasher.verify(password, hash, salt);
  }

  /**
   * updb `maxAttempts` (0 = unlimited): that many failed passwords in a row disable the identity
   * for `lockoutDurationMinutes` (0 = until an administrator enables it) and end its sessions.
   * The count lives in the database, so every replica sees the same attempts.
   */
  private async countFailure(identity: Identity, authenticatorId: string, policy: AuthPolicy | null): Promise<void> {
    const max = policy?.primary.updb.maxAttempts ?? 0;
    if (max <= 0) return;
    const attempts = await this.deps.work((s) => s.loginAttempts.recordFailure(authenticatorId, this.now()));
    if (attempts < max) return;
    await this.deps.work((s) => s.loginAttempts.reset(authenticatorId));
    await this.deps.lockout(identity.id, policy!.primary.updb.lockoutDurationMinutes);
    this.deps.onRefused?.('LOCKED_OUT', {
      identityId: identity.id,
      attempts,
      minutes: policy!.primary.updb.lockoutDurationMinutes,
    });
  }

  // ------------------------------------------------------------------------------- certificate

  /**
   * `method=cert` (ZITI-FACTS §1.2): a controller-issued certificate is found by the fingerprint
   * of its authenticator and must chain to the controller CA bundle; otherwise pki-enrollment
   * judges the chain (a verified CA with `isAuthEnabled`) and the identity is the certificate's
   * authenticator or the CA's `externalIdClaim`. `allowExpiredCerts` decides whether validity
   * periods count.
   */
  private async withCertificate(input: AuthenticateInput): Promise<AuthenticatedSession> {
    const chain = input.clientCertChain ?? [];
    const leafPem = chain[0];
    if (!leafPem) return this.refuse('NO_CLIENT_CERTIFICATE');
    const leaf = certificateOf(leafPem);
    if (!leaf) return this.refuse('BAD_CLIENT_CERTIFICATE');
    const now = this.now();

    const byFingerprint = await this.deps.work(async (s) => {
      const authenticator = await s.authenticators.findByFingerprint(leaf.fingerprint);
      const identity = authenticator ? await s.identities.get(authenticator.identityId) : null;
      return authenticator && identity
        ? { authenticator, identity, policy: await s.authPolicies.get(identity.authPolicyId) }
        : null;
    });

    if (byFingerprint) {
      const { authenticator, identity, policy } = byFingerprint;
      if (policy && !policy.primary.cert.allowed) return this.refuse('CERT_NOT_ALLOWED', { identityId: identity.id });
      const allowExpired = policy?.primary.cert.allowExpiredCerts ?? true;
      const validNow = now >= new Date(leaf.cert.validFrom) && now <= new Date(leaf.cert.validTo);
      if (!validNow && !allowExpired) return this.refuse('CERT_EXPIRED', { identityId: identity.id });
      // Inside the leaf's validity when expired certificates are allowed, so only the path counts.
      const at = validNow ? now : clamp(now, new Date(leaf.cert.validFrom), new Date(leaf.cert.validTo));
      const controllerIssued = await this.deps
        .verifyChain(leafPem, chain.slice(1), await this.deps.certificates.controllerCaBundle(), {
          at,
          usage: 'clientAuth',
        })
        .then(() => true)
        .catch(() => false);
      if (!controllerIssued) {
        const verdict = await this.deps.certificates.verifyWithPki(chain);
        if (!this.trustedByPki(verdict, leaf.fingerprint, allowExpired))
          return this.refuse('CERT_UNTRUSTED', { identityId: identity.id });
      }
      return this.openSession(identity, authenticator.id, 'cert', input, null);
    }

    const verdict = await this.deps.certificates.verifyWithPki(chain);
    if (!verdict || !verdict.trusted || verdict.fingerprint !== leaf.fingerprint || verdict.isAuthEnabled === false) {
      return this.refuse('CERT_UNTRUSTED', { fingerprint: leaf.fingerprint });
    }
    const externalId = verdict.externalId ?? null;
    if (!externalId) return this.refuse('CERT_UNKNOWN', { fingerprint: leaf.fingerprint });
    const found = await this.deps.work(async (s) => {
      const identity = await s.identities.findByExternalId(externalId);
      return identity ? { identity, policy: await s.authPolicies.get(identity.authPolicyId) } : null;
    });
    if (!found) return this.refuse('CERT_UNKNOWN_EXTERNAL_ID', { externalId });
    if (found.policy && !found.policy.primary.cert.allowed)
      return this.refuse('CERT_NOT_ALLOWED', { identityId: found.identity.id });
    if (verdict.expired && !(found.policy?.primary.cert.allowExpiredCerts ?? true))
      return this.refuse('CERT_EXPIRED', { identityId: found.identity.id });
    return this.openSession(found.identity, '', 'cert', input, null);
  }

  private trustedByPki(
    verdict: VerifyClientCertificateResult | null,
    fingerprint: string,
    allowExpired: boolean,
  ): boolean {
    if (!verdict || !verdict.trusted || verdict.fingerprint !== fingerprint) return false;
    if (verdict.isAuthEnabled === false) return false;
    return !verdict.expired || allowExpired;
  }

  // ------------------------------------------------------------------------------ external JWT

  private findSigner = (issuer: string) => this.deps.work((s) => s.extJwtSigners.findByIssuer(issuer));

  /** `method=ext-jwt` with `Authorization: Bearer <jwt>`: the rules of seed §5.1, then the auth policy. */
  private async withExternalJwt(input: AuthenticateInput): Promise<AuthenticatedSession> {
    const token = bearerToken(input.authorization);
    if (!token) return this.refuse('NO_BEARER_TOKEN');
    let verified;
    try {
      verified = await verifyExternalJwt(token, this.findSigner, this.deps.signerKeys, this.now());
    } catch (err) {
      if (err instanceof ExtJwtRejected) return this.refuse(err.reason, { detail: err.message });
      throw err;
    }
    const { signer, claim } = verified;
    const found = await this.deps.work(async (s) => {
      const identity = signer.useExternalId
        ? await s.identities.findByExternalId(claim)
        : await s.identities.get(claim);
      return identity ? { identity, policy: await s.authPolicies.get(identity.authPolicyId) } : null;
    });
    if (!found) return this.refuse('IDENTITY', { signerId: signer.id, claim });
    if (found.policy && !allowsSigner(found.policy.primary, signer.id)) {
      return this.refuse('EXT_JWT_NOT_ALLOWED', { identityId: found.identity.id, signerId: signer.id });
    }
    return this.openSession(found.identity, '', 'ext-jwt', input, signer.id);
  }

  /** Whether `jwt` is a valid JWT of `signer` naming `identity` (the secondary factor). */
  private async secondaryJwt(
    identity: Identity,
    signer: ExternalJwtSigner | null,
    jwt: string | undefined,
  ): Promise<Date | null> {
    if (!signer || !jwt) return null;
    try {
      const verified = await verifyExternalJwt(
        jwt,
        async (iss) => (iss === signer.issuer ? signer : null),
        this.deps.signerKeys,
        this.now(),
      );
      const matches = signer.useExternalId
        ? identity.externalId !== null && identity.externalId === verified.claim
        : identity.id === verified.claim;
      return matches ? verified.expiresAt : null;
    } catch (err) {
      if (err instanceof ExtJwtRejected) return null;
      throw err;
    }
  }

  /** `ziti.rpc.auth.call.verifyExtJwtSecondary`: the gateway's per-request check. */
  async verifySecondary(request: ExtJwtSecondaryRequest): Promise<ExtJwtSecondaryResult> {
    const fields = [request?.identityId, request?.signerId, request?.jwt];
    if (!fields.every((f) => typeof f === 'string' && f !== '' && f.length < 16_384)) return { valid: false };
    const found = await this.deps.work(async (s) => ({
      identity: await s.identities.get(request.identityId),
      signer: await s.extJwtSigners.get(request.signerId),
    }));
    if (!found.identity) return { valid: false };
    const expiresAt = await this.secondaryJwt(found.identity, found.signer, request.jwt);
    if (!expiresAt) return { valid: false };
    const until = Math.min(expiresAt.getTime(), this.now().getTime() + secondaryAnswerTtlMs);
    return { valid: true, validUntil: new Date(until).toISOString() };
  }

  // ---------------------------------------------------------------------------------- sessions

  private async openSession(
    identity: Identity,
    authenticatorId: string,
    method: 'password' | 'cert' | 'ext-jwt',
    input: AuthenticateInput,
    verifiedSignerId: string | null,
    /** What `sessionContext` read, when the caller read it already. */
    preloaded?: SessionContext,
  ): Promise<AuthenticatedSession> {
    if (isDisabled(identity, this.now())) return this.refuse('DISABLED', { identityId: identity.id });
    const { factors, mfaVerified, requiredSigner } =
      preloaded ?? (await this.deps.work((s: AuthStores) => this.sessionContext(s, identity)));
    const extJwtSatisfied =
      !factors.requiredExtJwtSigner ||
      verifiedSignerId === factors.requiredExtJwtSigner.id ||
      (await this.secondaryJwt(identity, requiredSigner, bearerToken(input.authorization))) !== null;

    const now = this.now().toISOString();
    const record: ApiSessionRecord = {
      id: cuid(),
      token: randomUUID(),
      identityId: identity.id,
      identityName: identity.name,
      isAdmin: identity.isAdmin,
      authenticatorId,
      authMethod: method,
      ipAddress: input.remoteAddress,
      configTypes: input.configTypes ?? [],
      isMfaRequired: mfaVerified,
      isMfaComplete: false,
      requireTotp: factors.requireTotp,
      requiredExtJwtSigner: factors.requiredExtJwtSigner,
      tags: {},
      createdAt: now,
      updatedAt: now,
    };
    // A login announces nothing (docs/adr/0017): the session lives in Redis, and whoever needs its
    // facts gets them with the caller. Only a changed envInfo/sdkInfo is a write, with its
    // identity.updated; it goes first, so a failed write leaves no session behind.
    const current = await this.recordClientInfo(identity, input);
    await this.deps.sessions.create(record, this.sessionTtlSeconds);
    // Just created with the full timeout: no need to read it back.
    const session = liveSession(record, this.sessionTtlSeconds * 1000, this.sessionTtlSeconds);
    return { session, identity: current, authQueries: pendingAuthQueries(record, extJwtSatisfied) };
  }

  /** The secondary factors of the identity's auth policy and whether it has MFA, for a new session. */
  private async sessionContext(s: AuthStores, identity: Identity): Promise<SessionContext> {
    const policy = await s.authPolicies.get(identity.authPolicyId);
    const requiredSigner = await requiredSignerOf(s, policy);
    return {
      factors: factorsOfPolicy(policy, requiredSigner),
      mfaVerified: (await s.mfa.verifiedAmong([identity.id])).has(identity.id),
      requiredSigner,
    };
  }

  /**
   * envInfo/sdkInfo are overwritten from the authenticate body when they differ (ZITI-FACTS §1.2),
   * announced as `identity.updated` (its `updatedAt` moves; the gateway's kept answers of the
   * identity show the new values).
   */
  private async recordClientInfo(identity: Identity, input: AuthenticateInput): Promise<Identity> {
    const envInfo = input.envInfo ?? identity.envInfo;
    const sdkInfo = input.sdkInfo ?? identity.sdkInfo;
    if (
      JSON.stringify(envInfo) === JSON.stringify(identity.envInfo) &&
      JSON.stringify(sdkInfo) === JSON.stringify(identity.sdkInfo)
    ) {
      return identity;
    }
    return this.deps.work(async (s) => {
      // On the stored identity, not the one read before the password check: nothing else is undone.
      const stored = await s.identities.get(identity.id, { forUpdate: true });
      // Deleted or disabled while the password was checked: no session, and no identity.updated
      // announcing an identity that is gone (its consumers would put it back).
      if (!stored) return this.refuse('UNKNOWN_USERNAME', { identityId: identity.id });
      if (isDisabled(stored, this.now())) return this.refuse('DISABLED', { identityId: identity.id });
      const next = { ...stored, envInfo, sdkInfo, updatedAt: this.now() };
      await s.identities.update(next);
      const t = eventTypes.identityUpdated;
      await s.events.emit(t, identityState(next));
      return next;
    });
  }

  async current(apiSessionId: string): Promise<{ session: LiveApiSession; identity: Identity }> {
    const session = await this.deps.sessions.getById(apiSessionId, this.sessionTtlSeconds);
    if (!session) throw new ApiError('UNAUTHORIZED');
    const identity = await this.reader((s) => s.identities.get(session.identityId));
    if (!identity) throw new ApiError('UNAUTHORIZED');
    return { session, identity };
  }

  async get(id: string): Promise<LiveApiSession> {
    const session = await this.deps.sessions.getById(id, this.sessionTtlSeconds);
    if (!session) throw ApiError.notFound('apiSession', id);
    return session;
  }

  async list(input: ListInput): Promise<ListPage<LiveApiSession>> {
    return this.deps.sessionQuery.list(await this.deps.sessions.listAll(this.sessionTtlSeconds), input);
  }

  /**
   * Logout (`logout`) or an administrator's delete (`admin`): the session ends at once, then its
   * `apiSession.deleted` commits, then its tombstone goes (api-session-events.ts).
   */
  async delete(id: string, reason: 'logout' | 'admin' = 'admin'): Promise<void> {
    const record = await this.deps.sessions.end(id, reason);
    if (!record) throw ApiError.notFound('apiSession', id);
    await this.deps.work((s) => emitApiSessionDeleted(s.events, record, reason, this.now()));
    // If this fails the sweeper announces the tombstone once more: a duplicate, not a loss.
    await this.deps.sessions.forget([id]).catch(() => undefined);
  }

  /** The identities among these with a live API session. */
  identitiesWithApiSessions(identityIds: string[]): Promise<Set<string>> {
    return this.deps.sessions.identitiesWithSessions(identityIds);
  }

  async identityNames(ids: string[]): Promise<Map<string, Identity>> {
    const found = await this.reader((s) => s.identities.getMany(ids));
    return new Map(found.map((i) => [i.id, i]));
  }
}

function clamp(at: Date, from: Date, to: Date): Date {
  return new Date(Math.min(Math.max(at.getTime(), from.getTime()), to.getTime()));
}
