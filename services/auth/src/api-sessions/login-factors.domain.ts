import type { ExternalJwtSigner } from '../external-jwt-signers/external-jwt-signer.domain.ts';
import type { Identity } from '../shared/model.domain.ts';
import type { AuthStores } from '../shared/stores.ports.ts';
import { type SecondaryFactors, factorsOfPolicy, requiredSignerOf } from './session-factors.domain.ts';

/**
 * MFA at login: what a new API session is made from, read with its identity. A verified MFA makes
 * the session wait for its TOTP code (`isMfaRequired`; the code itself is checked by MfaService),
 * and the auth policy's secondary factors (TOTP, a required external JWT signer) go on its record.
 */
export interface SessionContext {
  factors: SecondaryFactors;
  mfaVerified: boolean;
  requiredSigner: ExternalJwtSigner | null;
}

/** The secondary factors of the identity's auth policy and whether it has MFA, for a new session. */
export async function sessionContext(s: AuthStores, identity: Identity): Promise<SessionContext> {
  const policy = await s.authPolicies.get(identity.authPolicyId);
  const requiredSigner = await requiredSignerOf(s, policy);
  return {
    factors: factorsOfPolicy(policy, requiredSigner),
    mfaVerified: (await s.mfa.verifiedAmong([identity.id])).has(identity.id),
    requiredSigner,
  };
}
