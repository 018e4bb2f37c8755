import { createHash, X509Certificate } from 'node:crypto';
import {
  ApiError,
  type CreateAuthenticatorRequest,
  type CreateIdentityRequest,
  type CredentialAuthenticator,
  type IdentitySummary,
} from '@ziti/contracts';
import type { CredentialPort } from '../src/shared/credentials.ports.ts';

/** An in-memory stand-in for auth's credential calls (the real ones are exercised end to end). */
export class FakeCredentials implements CredentialPort {
  readonly identityMap = new Map<string, IdentitySummary>();
  readonly authenticators = new Map<string, CredentialAuthenticator & { password?: string }>();
  readonly createdIdentities: (CreateIdentityRequest & { finalName: string })[] = [];
  /** Makes the next createAuthenticator fail with this error. */
  failNext?: ApiError;
  private seq = 0;

  addIdentity(id: string, name = id): void {
    this.identityMap.set(id, { id, name, authPolicyId: 'default' });
  }

  private fingerprint(pem: string): string {
    return createHash('sha1').update(new X509Certificate(pem).raw).digest('hex');
  }

  async createAuthenticator(input: CreateAuthenticatorRequest): Promise<{ id: string }> {
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      throw err;
    }
    if (!this.identityMap.has(input.identityId)) throw ApiError.notFound('identity', input.identityId);
    const mine = [...this.authenticators.values()].filter((a) => a.identityId === input.identityId);
    if (mine.some((a) => a.method === input.method)) throw new ApiError('MAX_AUTHENTICATOR_METHODS_REACHED');
    const fingerprint = input.certPem ? this.fingerprint(input.certPem) : null;
    if (fingerprint && [...this.authenticators.values()].some((a) => a.certFingerprint === fingerprint))
      throw new ApiError('CERT_IN_USE');
    const id = `auth${++this.seq}`;
    this.authenticators.set(id, {
      id,
      identityId: input.identityId,
      method: input.method,
      username: input.username ?? null,
      certFingerprint: fingerprint,
      certPem: input.certPem ?? null,
      unverifiedCertPem: null,
      unverifiedCertFingerprint: null,
      caId: input.caId ?? null,
      ...(input.password ? { password: input.password } : {}),
    });
    return { id };
  }

  async getAuthenticator(id: string): Promise<CredentialAuthenticator> {
    const a = this.authenticators.get(id);
    if (!a) throw ApiError.notFound('authenticator', id);
    const { password: _p, ...rest } = a;
    return rest;
  }

  async stageCertificate(input: { authenticatorId: string; identityId: string; certPem: string }): Promise<void> {
    const a = this.authenticators.get(input.authenticatorId)!;
    a.unverifiedCertPem = input.certPem;
    a.unverifiedCertFingerprint = this.fingerprint(input.certPem);
  }

  async replaceCertificate(input: { authenticatorId: string; identityId: string; fingerprint: string }): Promise<void> {
    const a = this.authenticators.get(input.authenticatorId)!;
    if (a.unverifiedCertFingerprint !== input.fingerprint) throw new ApiError('INVALID_CLIENT_CERT');
    a.certPem = a.unverifiedCertPem;
    a.certFingerprint = a.unverifiedCertFingerprint;
    a.unverifiedCertPem = null;
    a.unverifiedCertFingerprint = null;
  }

  async deleteAuthenticator(id: string): Promise<void> {
    if (!this.authenticators.delete(id)) throw ApiError.notFound('authenticator', id);
  }

  async identities(ids: string[]): Promise<Map<string, IdentitySummary>> {
    return new Map(ids.flatMap((id) => (this.identityMap.has(id) ? [[id, this.identityMap.get(id)!] as const] : [])));
  }

  async createIdentity(input: CreateIdentityRequest): Promise<{ id: string; name: string }> {
    const fingerprint = input.certPem ? this.fingerprint(input.certPem) : null;
    if (fingerprint && [...this.authenticators.values()].some((a) => a.certFingerprint === fingerprint))
      throw new ApiError('CERT_IN_USE');
    const taken = new Set([...this.identityMap.values()].map((i) => i.name));
    let name = input.name;
    for (let i = 1; taken.has(name); i++) name = `${input.name}${String(i).padStart(6, '0')}`;
    this.addIdentity(input.id, name);
    this.createdIdentities.push({ ...input, finalName: name });
    if (input.certPem)
      await this.createAuthenticator({
        identityId: input.id,
        method: 'cert',
        certPem: input.certPem,
        ...(input.caId ? { caId: input.caId } : {}),
      });
    return { id: input.id, name };
  }
}
