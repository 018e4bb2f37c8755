import {
  type CreateAuthenticatorRequest,
  type CreateIdentityRequest,
  type IdentitySummary,
  authCallNames,
  createIdentityResultSchema,
  credentialAuthenticatorSchema,
  getIdentitiesResultSchema,
} from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import { z } from 'zod';
import type { CredentialPort } from '../domain/ports.ts';

const none = z.unknown();
const created = z.object({ id: z.string() });

/** auth's credential calls over the bus (ZITI-FACTS §8: enrollment produces auth's authenticators). */
export class BusCredentialPort implements CredentialPort {
  constructor(private readonly bus: Bus) {}

  createAuthenticator(input: CreateAuthenticatorRequest): Promise<{ id: string }> {
    return callService(this.bus, 'auth', authCallNames.createAuthenticator, input, { schema: created });
  }

  getAuthenticator(id: string) {
    return callService(
      this.bus,
      'auth',
      authCallNames.getAuthenticator,
      { id },
      { schema: credentialAuthenticatorSchema },
    );
  }

  async stageCertificate(input: { authenticatorId: string; identityId: string; certPem: string }): Promise<void> {
    await callService(this.bus, 'auth', authCallNames.stageCertificate, input, { schema: none });
  }

  async replaceCertificate(input: { authenticatorId: string; identityId: string; fingerprint: string }): Promise<void> {
    await callService(this.bus, 'auth', authCallNames.replaceCertificate, input, { schema: none });
  }

  async deleteAuthenticator(id: string): Promise<void> {
    await callService(this.bus, 'auth', authCallNames.deleteAuthenticator, { id }, { schema: none });
  }

  async identities(ids: string[]): Promise<Map<string, IdentitySummary>> {
    const unique = [...new Set(ids)].filter(Boolean);
    if (unique.length === 0) return new Map();
    const out = new Map<string, IdentitySummary>();
    for (let i = 0; i < unique.length; i += 1000) {
      const { identities } = await callService(
        this.bus,
        'auth',
        authCallNames.getIdentities,
        { ids: unique.slice(i, i + 1000) },
        { schema: getIdentitiesResultSchema },
      );
      for (const identity of identities) out.set(identity.id, identity);
    }
    return out;
  }

  createIdentity(input: CreateIdentityRequest): Promise<{ id: string; name: string }> {
    return callService(this.bus, 'auth', authCallNames.createIdentity, input, { schema: createIdentityResultSchema });
  }
}
