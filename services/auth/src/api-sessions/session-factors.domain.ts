import type { RequiredExtJwtSigner } from '@ziti/platform/sessions/api-session-store';
import type { AuthPolicy } from '../auth-policies/auth-policy.domain.ts';
import type { ExternalJwtSigner } from '../external-jwt-signers/external-jwt-signer.domain.ts';
import type { AuthStores, SessionStore, UnitOfWork } from '../shared/stores.ports.ts';

/**
 * The secondary factors an identity's auth policy demands, as API session records carry them for
 * the gateway's one-round-trip check (`requireTotp`, `requiredExtJwtSigner`).
 */
export interface SecondaryFactors {
  requireTotp: boolean;
  requiredExtJwtSigner: RequiredExtJwtSigner | null;
}

export async function secondaryFactorsOf(s: AuthStores, authPolicyId: string): Promise<SecondaryFactors> {
  const policy = await s.authPolicies.get(authPolicyId);
  return factorsOfPolicy(policy, await requiredSignerOf(s, policy));
}

/** The external JWT signer a policy requires, read; null when it requires none (or it is gone). */
export async function requiredSignerOf(s: AuthStores, policy: AuthPolicy | null): Promise<ExternalJwtSigner | null> {
  const signerId = policy?.secondary.requireExtJwtSigner;
  return signerId ? s.extJwtSigners.get(signerId) : null;
}

/** A policy's secondary factors (null: no policy, no factor), given its required signer as read. */
export function factorsOfPolicy(policy: AuthPolicy | null, signer: ExternalJwtSigner | null): SecondaryFactors {
  if (!policy) return { requireTotp: false, requiredExtJwtSigner: null };
  const signerId = policy.secondary.requireExtJwtSigner;
  return {
    requireTotp: policy.secondary.requireTotp,
    // A required signer that no longer exists still blocks: the policy cannot be met.
    requiredExtJwtSigner: signerId ? { id: signerId, externalAuthUrl: signer?.externalAuthUrl ?? null } : null,
  };
}

/**
 * Keeps live API sessions in step with the policies behind them: the reference reads the policy
 * on every request, here the gateway reads the session record only, so every change that moves
 * an identity's factors (its policy, the policy's secondary section, the required signer's
 * externalAuthUrl) rewrites the records of the sessions concerned.
 */
export class SessionFactorSync {
  constructor(
    private readonly work: UnitOfWork,
    private readonly sessions: SessionStore,
    private readonly sessionTtlSeconds: number,
  ) {}

  async refreshIdentities(identityIds: string[]): Promise<void> {
    const factorsByPolicy = new Map<string, SecondaryFactors>();
    for (const id of new Set(identityIds)) {
      const sessionIds = await this.sessions.listIdsByIdentity(id);
      if (sessionIds.length === 0) continue;
      const factors = await this.work(async (s) => {
        const identity = await s.identities.get(id);
        if (!identity) return null;
        const known = factorsByPolicy.get(identity.authPolicyId);
        if (known) return known;
        const computed = await secondaryFactorsOf(s, identity.authPolicyId);
        factorsByPolicy.set(identity.authPolicyId, computed);
        return computed;
      });
      if (!factors) continue;
      for (const sid of sessionIds) await this.sessions.update(sid, factors, this.sessionTtlSeconds);
    }
  }

  async refreshPolicies(policyIds: string[]): Promise<void> {
    for (const policyId of new Set(policyIds)) {
      await this.refreshIdentities(
        await this.work((s) => s.identities.idsByAuthPolicy(policyId, Number.MAX_SAFE_INTEGER)),
      );
    }
  }

  async refreshSigner(signerId: string): Promise<void> {
    await this.refreshPolicies(await this.work((s) => s.authPolicies.idsReferencingSigner(signerId)));
  }
}
