import type { ExtJwtSecondaryRequest, ExtJwtSecondaryResult } from '@ziti/platform/sessions/api-session-store';
import { allowsSigner } from '../auth-policies/auth-policy.domain.ts';
import type { AttemptSubject } from '../authentication-attempts/authentication-attempts.domain.ts';
import { ExtJwtRejected, verifyExternalJwt } from '../external-jwt-signers/external-jwt.domain.ts';
import type { ExternalJwtSigner } from '../external-jwt-signers/external-jwt-signer.domain.ts';
import type { Identity } from '../shared/model.domain.ts';
import { type AuthenticateInput, type AuthenticatedSession, type LoginContext, bearerToken } from './login.domain.ts';
import type { SessionOpening } from './session-opening.domain.ts';

/** How long the gateway may reuse a positive secondary external-JWT answer at most. */
const secondaryAnswerTtlMs = 60_000;

/** Whether `jwt` is a valid JWT of `signer` naming `identity` (the secondary factor): when it expires. */
export async function secondaryJwt(
  login: LoginContext,
  identity: Identity,
  signer: ExternalJwtSigner | null,
  jwt: string | undefined,
): Promise<Date | null> {
  if (!signer || !jwt) return null;
  try {
    const verified = await verifyExternalJwt(
      jwt,
      async (iss) => (iss === signer.issuer ? signer : null),
      login.deps.signerKeys,
      login.now(),
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

/** `method=ext-jwt`, and the secondary external-JWT check the gateway asks for. */
export class ExternalJwtLogin {
  constructor(
    private readonly login: LoginContext,
    private readonly sessions: SessionOpening,
  ) {}

  private findSigner = (issuer: string) => this.login.deps.work((s) => s.extJwtSigners.findByIssuer(issuer));

  /** `method=ext-jwt` with `Authorization: Bearer <jwt>`: the rules of seed §5.1, then the auth policy. */
  /** `subject` learns who the JWT names once that identity is found (for the attempt's report). */
  async authenticate(input: AuthenticateInput, subject: AttemptSubject): Promise<AuthenticatedSession> {
    const { deps, now, refuse } = this.login;
    const token = bearerToken(input.authorization);
    if (!token) return refuse('NO_BEARER_TOKEN');
    let verified;
    try {
      verified = await verifyExternalJwt(token, this.findSigner, deps.signerKeys, now());
    } catch (err) {
      if (err instanceof ExtJwtRejected) return refuse(err.reason, { detail: err.message });
      throw err;
    }
    const { signer, claim } = verified;
    const found = await deps.work(async (s) => {
      const identity = signer.useExternalId
        ? await s.identities.findByExternalId(claim)
        : await s.identities.get(claim);
      return identity ? { identity, policy: await s.authPolicies.get(identity.authPolicyId) } : null;
    });
    if (!found) return refuse('IDENTITY', { signerId: signer.id, claim });
    subject.identity = found.identity;
    if (found.policy && !allowsSigner(found.policy.primary, signer.id)) {
      return refuse('EXT_JWT_NOT_ALLOWED', { identityId: found.identity.id, signerId: signer.id });
    }
    return this.sessions.open(found.identity, '', 'ext-jwt', input, signer.id);
  }

  /** `ziti.rpc.auth.call.verifyExtJwtSecondary`: the gateway's per-request check. */
  async verifySecondary(request: ExtJwtSecondaryRequest): Promise<ExtJwtSecondaryResult> {
    const fields = [request?.identityId, request?.signerId, request?.jwt];
    if (!fields.every((f) => typeof f === 'string' && f !== '' && f.length < 16_384)) return { valid: false };
    const found = await this.login.deps.work(async (s) => ({
      identity: await s.identities.get(request.identityId),
      signer: await s.extJwtSigners.get(request.signerId),
    }));
    if (!found.identity) return { valid: false };
    const expiresAt = await secondaryJwt(this.login, found.identity, found.signer, request.jwt);
    if (!expiresAt) return { valid: false };
    const until = Math.min(expiresAt.getTime(), this.login.now().getTime() + secondaryAnswerTtlMs);
    return { valid: true, validUntil: new Date(until).toISOString() };
  }
}
