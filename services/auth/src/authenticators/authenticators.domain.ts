import { X509Certificate, createHash } from 'node:crypto';
import { ApiError } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import { assertPasswordMeetsPolicy } from '../auth-policies/auth-policy.domain.ts';
import type { Authenticator, ListInput, ListPage } from '../shared/model.domain.ts';
import { passwordLimits, usernameLimits } from '../passwords/password.domain.ts';
import type { AuthStores, SessionStore, UnitOfWork } from '../shared/stores.ports.ts';
import { SessionEnding } from '../api-sessions/session-ending.domain.ts';
import type { PasswordHasher } from '../passwords/passwords.ports.ts';
import { emitAuthenticator } from '../shared/credential-events.domain.ts';

export interface AuthenticatorInput {
  identityId?: string;
  /** Self-service updates (`/current-identity/authenticators/{id}`) prove the current password. */
  currentPassword?: string | null;
  method?: string;
  username?: string | null;
  password?: string | null;
  certPem?: string | null;
  tags?: Record<string, unknown> | null;
}

function checkLength(field: string, value: string, limits: { min: number; max: number }): void {
  if (value.length < limits.min)
    throw ApiError.field(
      field,
      `${field} in body should be at least ${limits.min} chars long`,
      value.length > 0 ? '***' : value,
    );
  if (value.length > limits.max)
    throw ApiError.field(field, `${field} in body should be at most ${limits.max} chars long`, '***');
}

/** Lower-case hex SHA-1 of the certificate's DER, the reference's fingerprint. */
export function certificateFingerprint(certPem: string): string {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    throw new ApiError('INVALID_CERT_PEM', {
      field: 'certPem',
      reason: 'certPem is not a PEM encoded x509 certificate',
      value: '<pem>',
    });
  }
  return createHash('sha1').update(cert.raw).digest('hex');
}

/** A password set through the API or enrollment must meet the identity's auth policy (updb section). */
export async function assertPasswordAllowed(s: AuthStores, identityId: string, password: string): Promise<void> {
  const identity = await s.identities.get(identityId);
  const policy = identity ? await s.authPolicies.get(identity.authPolicyId) : null;
  if (policy) assertPasswordMeetsPolicy(password, policy.primary.updb);
}

/**
 * Whether a certificate comes from a CA this controller knows (its own PKI or a verified CA): true
 * or false, or an ApiError (503) when the owner of the CAs cannot say. Never true on a failed check.
 */
export interface AuthenticatorCertificateVouching {
  vouchesFor(certPem: string): Promise<boolean>;
}

/** Administration of authenticators (updb and cert), at most one per method and identity. */
export class AuthenticatorService {
  private readonly ending: SessionEnding;

  constructor(
    private readonly work: UnitOfWork,
    private readonly hasher: PasswordHasher,
    sessions: Pick<SessionStore, 'endByIdentity' | 'forget'>,
    private readonly vouching: AuthenticatorCertificateVouching,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.ending = new SessionEnding(sessions, now);
  }

  async get(id: string): Promise<Authenticator> {
    return this.work((s) => this.load(s, id));
  }

  private async load(s: AuthStores, id: string, forUpdate = false): Promise<Authenticator> {
    const a = await s.authenticators.get(id, { forUpdate });
    if (!a) throw ApiError.notFound('authenticator', id);
    return a;
  }

  async list(input: ListInput, identityId?: string): Promise<ListPage<Authenticator>> {
    return this.work(async (s) => {
      if (identityId && !(await s.identities.get(identityId))) throw ApiError.notFound('identity', identityId);
      return s.authenticators.list(input, identityId);
    });
  }

  async create(input: AuthenticatorInput): Promise<Authenticator> {
    const method = input.method;
    if (method !== 'updb' && method !== 'cert')
      throw ApiError.field('method', 'method in body should be one of [updb cert]', method);
    const now = this.now();
    const a: Authenticator = {
      id: base62Uuid(),
      identityId: input.identityId ?? '',
      method,
      username: null,
      passwordHash: null,
      salt: null,
      certFingerprint: null,
      certPem: null,
      tags: input.tags ?? {},
      createdAt: now,
      updatedAt: now,
    };
    if (method === 'updb') {
      if (!input.username) throw ApiError.field('username', 'username in body is required', input.username);
      if (!input.password) throw ApiError.field('password', 'password in body is required', input.password);
      checkLength('username', input.username, usernameLimits);
      checkLength('password', input.password, passwordLimits);
      a.username = input.username;
      Object.assign(a, await this.hasher.hash(input.password).then((h) => ({ passwordHash: h.hash, salt: h.salt })));
    } else {
      if (!input.certPem) throw ApiError.field('certPem', 'certPem in body is required', input.certPem);
      a.certFingerprint = certificateFingerprint(input.certPem);
      a.certPem = input.certPem;
      // As the reference: only a certificate of a known CA (the reference answers 500; a field error is right).
      if (!(await this.vouching.vouchesFor(input.certPem))) {
        throw ApiError.field(
          'certPem',
          `the certificate [${a.certFingerprint}] did not verify against known CAs`,
          a.certFingerprint,
        );
      }
    }
    return this.work(async (s) => {
      if (!(await s.identities.get(a.identityId))) {
        throw new ApiError('COULD_NOT_VALIDATE', {
          field: 'identityId',
          reason: `no identity found with id ${a.identityId}`,
          value: a.identityId,
        });
      }
      if (method === 'updb') await assertPasswordAllowed(s, a.identityId, input.password!);
      const existing = await s.authenticators.listByIdentity(a.identityId);
      if (existing.some((e) => e.method === method)) {
        throw new ApiError('MAX_AUTHENTICATOR_METHODS_REACHED', {
          field: 'method',
          reason: `identity already has a ${method} authenticator`,
          value: method,
        });
      }
      await s.authenticators.insert(a);
      await emitAuthenticator(s.events, 'authenticatorCreated', a);
      return a;
    });
  }

  /**
   * Replaces (PUT: username and password required) or patches an authenticator. Only updb
   * authenticators have updatable credentials; cert ones may only change tags.
   */
  /** The caller's own authenticators (`GET /current-identity/authenticators`). */
  async listOwn(identityId: string, input: ListInput): Promise<ListPage<Authenticator>> {
    return this.work((s) => s.authenticators.list(input, identityId));
  }

  /** One of the caller's authenticators; someone else's is not found. */
  async getOwn(identityId: string, id: string): Promise<Authenticator> {
    const a = await this.work((s) => s.authenticators.get(id));
    if (!a || a.identityId !== identityId) throw ApiError.notFound('authenticator', id);
    return a;
  }

  /**
   * Self-service replace/patch of the caller's updb authenticator: the current password must be
   * right (401 UNAUTHORIZED with the field in the cause, ZITI-FACTS §11), the new one must meet
   * the auth policy.
   */
  async updateOwn(identityId: string, id: string, input: AuthenticatorInput, mode: 'replace' | 'patch'): Promise<void> {
    const own = await this.getOwn(identityId, id);
    if (own.method !== 'updb' || !own.passwordHash || !own.salt) {
      throw new ApiError('CAN_NOT_UPDATE_AUTHENTICATOR', {
        code: 'UNHANDLED',
        message: 'only updb authenticators have a username and password',
      });
    }
    const current = input.currentPassword ?? '';
    if (!current || !(await this.hasher.verify(current, own.passwordHash, own.salt))) {
      throw new ApiError('UNAUTHORIZED', {
        field: 'currentPassword',
        reason: 'the current password is not correct',
        value: '***',
      });
    }
    await this.update(id, input, mode);
  }

  async update(id: string, input: AuthenticatorInput, mode: 'replace' | 'patch'): Promise<void> {
    const has = (k: keyof AuthenticatorInput) => mode === 'replace' || (Object.hasOwn(input, k) && input[k] != null);
    let hashed: { hash: string; salt: string } | undefined;
    if (has('password')) {
      if (!input.password) throw ApiError.field('password', 'password in body is required', input.password);
      checkLength('password', input.password, passwordLimits);
    }
    if (has('username')) {
      if (!input.username) throw ApiError.field('username', 'username in body is required', input.username);
      checkLength('username', input.username, usernameLimits);
    }
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      if (current.method !== 'updb' && (has('password') || has('username'))) {
        throw new ApiError('CAN_NOT_UPDATE_AUTHENTICATOR', {
          code: 'UNHANDLED',
          message: 'only updb authenticators have a username and password',
        });
      }
      const next: Authenticator = { ...current, updatedAt: this.now() };
      if (has('username')) next.username = input.username!;
      if (has('password')) await assertPasswordAllowed(s, current.identityId, input.password!);
      if (has('password')) {
        hashed ??= await this.hasher.hash(input.password!);
        next.passwordHash = hashed.hash;
        next.salt = hashed.salt;
      }
      if (mode === 'replace' || Object.hasOwn(input, 'tags')) next.tags = input.tags ?? {};
      await s.authenticators.update(next);
      await emitAuthenticator(s.events, 'authenticatorUpdated', next);
    });
  }

  /** Deletes an authenticator and ends the API sessions made with it (as the reference does). */
  async delete(id: string): Promise<void> {
    const found = await this.work((s) => this.load(s, id));
    const scope = { identityId: found.identityId, authenticatorId: id };
    await this.ending.around(this.work, scope, 'authenticatorDeleted', async (s) => {
      const current = await this.load(s, id, true);
      await s.authenticators.delete(id);
      await emitAuthenticator(s.events, 'authenticatorDeleted', current);
    });
  }
}
