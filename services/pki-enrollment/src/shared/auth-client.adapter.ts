import {
  type CreateAuthenticatorRequest,
  type CreateIdentityRequest,
  type IdentitySummary,
  authCallContracts as auth,
} from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { CredentialPort } from './credentials.ports.ts';

/** auth's credential calls over the bus (ZITI-FACTS §8: enrollment produces auth's authenticators). */
export class BusCredentialPort implements CredentialPort {
  constructor(private readonly bus: Bus) {}

  createAuthenticator(input: CreateAuthenticatorRequest): Promise<{ id: string }> {
    return callService(this.bus, 'auth', auth.createAuthenticator, input);
  }

  getAuthenticator(id: string) {
    return callService(this.bus, 'auth', auth.getAuthenticator, { id });
  }

  async stageCertificate(input: { authenticatorId: string; identityId: string; certPem: string }): Promise<void> {
    await callService(this.bus, 'auth', auth.stageCertificate, input);
  }

  async replaceCertificate(input: { authenticatorId: string; identityId: string; fingerprint: string }): Promise<void> {
    await callService(this.bus, 'auth', auth.replaceCertificate, input);
  }

  async deleteAuthenticator(id: string): Promise<void> {
    await callService(this.bus, 'auth', auth.deleteAuthenticator, { id });
  }

  async identities(ids: string[]): Promise<Map<string, IdentitySummary>> {
    const unique = [...new Set(ids)].filter(Boolean);
    if (unique.length === 0) return new Map();
    const out = new Map<string, IdentitySummary>();
    for (let i = 0; i < unique.length; i += 1000) {
      const { identities } = await callService(this.bus, 'auth', auth.getIdentities, {
        ids: unique.slice(i, i + 1000),
      });
      for (const identity of identities) out.set(identity.id, identity);
    }
    return out;
  }

  createIdentity(input: CreateIdentityRequest): Promise<{ id: string; name: string }> {
    return callService(this.bus, 'auth', auth.createIdentity, input);
  }
}
