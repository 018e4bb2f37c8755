import { randomUUID } from 'node:crypto';
import { ApiError } from '@ziti/contracts';
import { type AuthPolicy, defaultAuthPolicyId } from '../auth-policies/auth-policy.domain.ts';
import type { AttemptSubject } from '../authentication-attempts/authentication-attempts.domain.ts';
import type { Identity } from '../shared/model.domain.ts';
import { factorsOfPolicy, requiredSignerOf } from './session-factors.domain.ts';
import type { SessionContext } from './login-factors.domain.ts';
import type { AuthenticateInput, AuthenticatedSession, LoginContext } from './login.domain.ts';
import type { SessionOpening } from './session-opening.domain.ts';

/** `method=password`: an updb authenticator's password, under the auth policy's updb rules and lockout. */
export class PasswordLogin {
  /** What a login with no usable password is checked against (made once, same hasher and parameters). */
  private dummyCredential?: Promise<{ hash: string; salt: string }>;

  constructor(
    private readonly login: LoginContext,
    private readonly sessions: SessionOpening,
  ) {}

  /** `subject` learns who is trying once the username matched an identity (for the attempt's report). */
  async authenticate(input: AuthenticateInput, subject: AttemptSubject): Promise<AuthenticatedSession> {
    const { deps, reader, refuse } = this.login;
    if (!input.username || !input.password) {
      throw new ApiError('COULD_NOT_VALIDATE', {
        field: input.username ? 'password' : 'username',
        reason: 'username and password fields are required',
      });
    }
    const password = input.password;
    // Reads only, in one statement outside a transaction; an unknown username reads the default
    // policy too, so both cost the same until the hash.
    const found = await reader((s) => s.authenticators.findPasswordLogin(input.username!, defaultAuthPolicyId));
    const { authenticator, identity, policy } = found;
    if (authenticator && identity) {
      subject.identity = identity;
      subject.authenticatorId = authenticator.id;
    }
    if (!authenticator || !identity || !authenticator.passwordHash || !authenticator.salt) {
      await this.verifyDummy(password);
      return refuse('UNKNOWN_USERNAME');
    }
    if (policy && !policy.primary.updb.allowed) {
      await this.verifyDummy(password);
      return refuse('UPDB_NOT_ALLOWED', { identityId: identity.id, authPolicyId: policy.id });
    }
    if (!(await deps.hasher.verify(password, authenticator.passwordHash, authenticator.salt))) {
      await this.countFailure(identity, authenticator.id, policy);
      return refuse('WRONG_PASSWORD', { identityId: identity.id });
    }
    // After the password: the failure count goes (a write only when the policy counts failures
    // and some were counted; most logins have none to clear).
    if (policy !== null && policy.primary.updb.maxAttempts > 0 && found.failedAttempts > 0) {
      await deps.work((s) => s.loginAttempts.reset(authenticator.id));
    }
    // The policy's factors need a read only when it requires an external JWT signer.
    const requiredSigner = policy?.secondary.requireExtJwtSigner
      ? await reader((s) => requiredSignerOf(s, policy))
      : null;
    const context: SessionContext = {
      factors: factorsOfPolicy(policy, requiredSigner),
      mfaVerified: found.mfaVerified,
      requiredSigner,
    };
    return this.sessions.open(identity, authenticator.id, 'password', input, null, context);
  }

  /**
   * A full verification against a dummy credential of the same hasher, for a login that has no
   * password to check: an unknown username costs what a known one does, so timing does not tell
   * which usernames exist.
   */
  private async verifyDummy(password: string): Promise<void> {
    const { hasher } = this.login.deps;
    this.dummyCredential ??= hasher.hash(randomUUID()).catch((err: unknown) => {
      this.dummyCredential = undefined;
      throw err;
    });
    const { hash, salt } = await this.dummyCredential;
    await hasher.verify(password, hash, salt);
  }

  /**
   * updb `maxAttempts` (0 = unlimited): that many failed passwords in a row disable the identity
   * for `lockoutDurationMinutes` (0 = until an administrator enables it) and end its sessions.
   * The count lives in the database, so every replica sees the same attempts.
   */
  private async countFailure(identity: Identity, authenticatorId: string, policy: AuthPolicy | null): Promise<void> {
    const { deps, now } = this.login;
    const max = policy?.primary.updb.maxAttempts ?? 0;
    if (max <= 0) return;
    const attempts = await deps.work((s) => s.loginAttempts.recordFailure(authenticatorId, now()));
    if (attempts < max) return;
    await deps.work((s) => s.loginAttempts.reset(authenticatorId));
    await deps.lockout(identity.id, policy!.primary.updb.lockoutDurationMinutes);
    deps.onRefused?.('LOCKED_OUT', {
      identityId: identity.id,
      attempts,
      minutes: policy!.primary.updb.lockoutDurationMinutes,
    });
  }
}
