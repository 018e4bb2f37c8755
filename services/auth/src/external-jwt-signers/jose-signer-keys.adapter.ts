import { X509Certificate } from 'node:crypto';
import { type KeyInput, type RemoteJWKSet, createRemoteJWKSet, errors } from 'jose';
import type { ExternalJwtSigner } from './external-jwt-signer.domain.ts';
import { type SignerKeys, SignerKeysUnavailable } from './external-jwt.domain.ts';

export interface JwksOptions {
  /** Keys are fetched again after this long even when every kid is known (10 minutes). */
  maxAgeMs?: number;
  /** An unknown kid fetches the JWKS again at most this often per endpoint (rotation, 1 s). */
  refetchCooldownMs?: number;
  /** The fetch gives up after this long (5 s). */
  timeoutMs?: number;
  /** Most endpoints kept (LRU). */
  maxEndpoints?: number;
}

/**
 * Signer keys: a certificate signer's public key from its PEM, a JWKS signer's keys from its
 * endpoint through jose's remote key set (cached per endpoint, fetched again on an unknown kid
 * after a short cooldown, so an IdP rotating its keys is followed without a restart, while a flood
 * of made-up kids costs the endpoint at most one fetch per cooldown).
 */
export class JoseSignerKeys implements SignerKeys {
  private readonly sets = new Map<string, RemoteJWKSet>();
  private readonly certKeys = new Map<string, KeyInput>();

  constructor(private readonly options: JwksOptions = {}) {}

  async certificateKey(signer: ExternalJwtSigner): Promise<KeyInput> {
    const pem = signer.certPem ?? '';
    const cached = this.certKeys.get(pem);
    if (cached) return cached;
    const key = new X509Certificate(pem).publicKey as unknown as KeyInput;
    if (this.certKeys.size > 1_000) this.certKeys.clear();
    this.certKeys.set(pem, key);
    return key;
  }

  async jwksKey(signer: ExternalJwtSigner, header: { kid: string; alg: string }): Promise<KeyInput | null> {
    const endpoint = signer.jwksEndpoint;
    if (!endpoint) return null;
    let set = this.sets.get(endpoint);
    if (set) {
      this.sets.delete(endpoint);
    } else {
      set = createRemoteJWKSet(new URL(endpoint), {
        cacheMaxAge: this.options.maxAgeMs ?? 600_000,
        cooldownDuration: this.options.refetchCooldownMs ?? 1_000,
        timeoutDuration: this.options.timeoutMs ?? 5_000,
      });
    }
    this.sets.set(endpoint, set);
    while (this.sets.size > (this.options.maxEndpoints ?? 100)) {
      const oldest = this.sets.keys().next().value;
      if (oldest === undefined) break;
      this.sets.delete(oldest);
    }
    try {
      return await set({ kid: header.kid, alg: header.alg });
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey) return null;
      if (err instanceof errors.JWKSMultipleMatchingKeys) return null;
      throw new SignerKeysUnavailable(`JWKS of signer ${signer.id}: ${(err as Error).message}`);
    }
  }
}
