import type {
  CreateAuthenticatorRequest,
  CreateIdentityRequest,
  CredentialAuthenticator,
  IdentitySummary,
} from '@ziti/contracts';

/**
 * What pki-enrollment needs from auth, which owns identities and authenticators. Calls go over the
 * bus and keep their error codes (CERT_IN_USE, MAX_AUTHENTICATOR_METHODS_REACHED, NOT_FOUND, …).
 */
export interface CredentialPort {
  createAuthenticator(input: CreateAuthenticatorRequest): Promise<{ id: string }>;
  /** NOT_FOUND when it does not exist. */
  getAuthenticator(id: string): Promise<CredentialAuthenticator>;
  stageCertificate(input: { authenticatorId: string; identityId: string; certPem: string }): Promise<void>;
  replaceCertificate(input: { authenticatorId: string; identityId: string; fingerprint: string }): Promise<void>;
  deleteAuthenticator(id: string): Promise<void>;
  identities(ids: string[]): Promise<Map<string, IdentitySummary>>;
  createIdentity(input: CreateIdentityRequest): Promise<{ id: string; name: string }>;
}
