import {
  ApiError,
  type CreateAuthenticatorRequest,
  type CreateIdentityRequest,
  type IdentitySummary,
  type Owner,
  authCallNames,
  createIdentityResultSchema,
  credentialAuthenticatorSchema,
  getIdentitiesResultSchema,
  subjects,
} from '@ziti/contracts';
import { type Bus, NoRespondersError, RequestTimeoutError } from '@ziti/platform';
import { z } from 'zod';
import type { CredentialPort } from '../domain/ports.ts';

/** Service-to-service calls stay inside the gateway's 10 s budget. */
const CALL_TIMEOUT_MS = 8_000;

/** A call to another service; a down or slow owner becomes the API's 503 codes, not a 500. */
export async function callService<T>(
  bus: Bus,
  owner: Owner,
  action: string,
  payload: unknown,
  schema: z.ZodType<T>,
): Promise<T> {
  let result: unknown;
  try {
    result = await bus.request(subjects.call(owner, action), payload, { timeoutMs: CALL_TIMEOUT_MS });
  } catch (err) {
    if (err instanceof NoRespondersError)
      throw new ApiError('SERVICE_UNAVAILABLE', { code: 'SERVICE_UNAVAILABLE', message: `${owner} is not available` });
    if (err instanceof RequestTimeoutError)
      throw new ApiError('TIMEOUT', { code: 'TIMEOUT', message: `${owner} did not answer ${action} in time` });
    throw err;
  }
  const parsed = schema.safeParse(result);
  if (!parsed.success) throw new ApiError('UNHANDLED', `${owner}.${action} answered an unexpected shape`);
  return parsed.data;
}

const none = z.unknown();
const created = z.object({ id: z.string() });

/** auth's credential calls over the bus (ZITI-FACTS §8: enrollment produces auth's authenticators). */
export class BusCredentialPort implements CredentialPort {
  constructor(private readonly bus: Bus) {}

  createAuthenticator(input: CreateAuthenticatorRequest): Promise<{ id: string }> {
    return callService(this.bus, 'auth', authCallNames.createAuthenticator, input, created);
  }

  getAuthenticator(id: string) {
    return callService(this.bus, 'auth', authCallNames.getAuthenticator, { id }, credentialAuthenticatorSchema);
  }

  async stageCertificate(input: { authenticatorId: string; identityId: string; certPem: string }): Promise<void> {
    await callService(this.bus, 'auth', authCallNames.stageCertificate, input, none);
  }

  async replaceCertificate(input: { authenticatorId: string; identityId: string; fingerprint: string }): Promise<void> {
    await callService(this.bus, 'auth', authCallNames.replaceCertificate, input, none);
  }

  async deleteAuthenticator(id: string): Promise<void> {
    await callService(this.bus, 'auth', authCallNames.deleteAuthenticator, { id }, none);
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
        getIdentitiesResultSchema,
      );
      for (const identity of identities) out.set(identity.id, identity);
    }
    return out;
  }

  createIdentity(input: CreateIdentityRequest): Promise<{ id: string; name: string }> {
    return callService(this.bus, 'auth', authCallNames.createIdentity, input, createIdentityResultSchema);
  }
}
