import { ApiError } from '@ziti/contracts';
import { decodeProtectedHeader, exportJWK, importX509 } from 'jose';
import type { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import type { Ca, Enrollment, EnrollmentMethod } from '../shared/model.domain.ts';
import { parsePemChain } from '@ziti/x509';
import { jwtAlgorithmFor, signEnrollmentJwt } from '@ziti/x509';
import { importPrivateKeyPem, subtle } from '@ziti/x509';

/**
 * Issues enrollment JWTs (ZITI-FACTS §8.1) with the edge API's TLS key: `kid` is the SHA-1 of the
 * server certificate, and clients verify with the key of the certificate the listener presents.
 */
export class EnrollmentJwtIssuer {
  constructor(
    private readonly pki: ControllerPkiService,
    /** host:port clients dial. */
    private readonly advertisedAddress: string,
  ) {}

  /** `https://<advertised address>`. */
  get issuer(): string {
    return `https://${this.advertisedAddress}`;
  }

  private kid?: { chainPem: string; kid: string };

  /** The `kid` of JWTs signed now: the fingerprint of the current server certificate. */
  currentKid(): string {
    const chainPem = this.pki.serverIdentity().certChainPem;
    if (this.kid?.chainPem !== chainPem) this.kid = { chainPem, kid: parsePemChain(chainPem)[0]!.fingerprint };
    return this.kid.kid;
  }

  async sign(params: { subject: string; token: string; method: EnrollmentMethod; expiresAt: Date }): Promise<string> {
    const server = this.pki.serverIdentity();
    return signEnrollmentJwt({
      serverCertPem: server.certChainPem,
      serverKeyPem: server.keyPem,
      claims: { iss: this.issuer, sub: params.subject, jti: params.token, em: params.method, exp: params.expiresAt },
    });
  }

  /**
   * The enrollment's JWT, re-signed when the server certificate was renewed since it was issued
   * (clients verify against the certificate presented now).
   */
  async current(enrollment: Enrollment): Promise<string> {
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(enrollment.jwt).kid;
    } catch {
      kid = undefined;
    }
    if (kid === this.currentKid()) return enrollment.jwt;
    return this.sign({
      subject: enrollment.identityId ?? enrollment.edgeRouterId ?? enrollment.transitRouterId ?? '',
      token: enrollment.token,
      method: enrollment.method,
      expiresAt: enrollment.expiresAt,
    });
  }

  /** The CA's static JWT for auto-enrollment: `iss` with a trailing slash, no `exp`, no `aud` (ZITI-FACTS §8.3). */
  async caJwt(ca: Pick<Ca, 'id'>): Promise<string> {
    const server = this.pki.serverIdentity();
    return signEnrollmentJwt({
      serverCertPem: server.certChainPem,
      serverKeyPem: server.keyPem,
      claims: { iss: `${this.issuer}/`, sub: ca.id, jti: ca.id, em: 'ca', aud: null },
    });
  }

  /**
   * `/enroll/jwks`: the key enrollment JWTs are signed with, as a JWK with `kid`, `alg`, `use` and
   * the certificate chain (`x5c`) it belongs to.
   */
  async jwks(): Promise<{ keys: Record<string, unknown>[] }> {
    const chain = parsePemChain(this.pki.serverIdentity().certChainPem);
    const leaf = chain[0]!;
    const alg = jwtAlgorithmFor(leaf);
    const jwk = await exportJWK(await importX509(leaf.pem, alg, { extractable: true }));
    return {
      keys: [
        {
          ...jwk,
          kid: leaf.fingerprint,
          alg,
          use: 'sig',
          x5c: chain.map((c) => Buffer.from(c.der).toString('base64')),
        },
      ],
    };
  }

  /**
   * `/enroll/challenge`: proves this controller holds the key of `keyId` by signing the caller's
   * nonce (a UUID). The signature is base64 of the JWS form (ECDSA: r‖s), verifiable with the JWK.
   */
  async signChallenge(input: {
    keyId?: string;
    nonce?: string;
  }): Promise<{ algorithm: string; caPool: string; kid: string; signature: string }> {
    const nonce = input.nonce ?? '';
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(nonce)) {
      throw ApiError.field('nonce', `nonce in body must be of type uuid: ${JSON.stringify(nonce)}`, nonce);
    }
    const kid = this.currentKid();
    if (input.keyId !== kid) throw ApiError.field('keyId', 'keyId is not a key of this controller', input.keyId);
    const server = this.pki.serverIdentity();
    const leaf = parsePemChain(server.certChainPem)[0]!;
    const imported = await importPrivateKeyPem(server.keyPem);
    const signature = await subtle().sign(imported.signingAlgorithm, imported.key, new TextEncoder().encode(nonce));
    return {
      algorithm: jwtAlgorithmFor(leaf),
      caPool: server.caBundlePem,
      kid,
      signature: Buffer.from(signature).toString('base64'),
    };
  }
}
