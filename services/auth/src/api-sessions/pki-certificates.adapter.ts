import {
  type VerifyClientCertificateRequest,
  type VerifyClientCertificateResult,
  pkiEnrollmentCallContracts as pki,
} from '@ziti/contracts';
import { ApiError } from '@ziti/contracts';
import { type Bus, type Logger, callService } from '@ziti/platform';
import type { ClientCertificateTrust } from './authentication.domain.ts';

interface PublicServerIdentity {
  certChainPem: string;
  caBundlePem: string;
}

/** Splits a PEM bundle into its certificates. */
export function pemCertificates(bundle: string): string[] {
  return [...bundle.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)].map((m) => `${m[0]}\n`);
}

/**
 * What auth asks pki-enrollment about certificates: the controller's public TLS identity (CA
 * bundle and server certificate, cached; the private key is dropped on arrival) and its verdict on
 * a client certificate chain. A pki-enrollment that is down, or does not answer the call yet, means
 * "not trusted": a certificate is never accepted on a failed check.
 */
export class PkiCertificates implements ClientCertificateTrust {
  private cached?: { value: PublicServerIdentity; at: number };
  private loading?: Promise<PublicServerIdentity>;

  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly cacheMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async serverIdentity(): Promise<PublicServerIdentity> {
    if (this.cached && this.now() - this.cached.at < this.cacheMs) return this.cached.value;
    this.loading ??= callService(this.bus, 'pki-enrollment', pki.serverIdentity, {}, { timeoutMs: 5_000 })
      .then((parsed) => {
        const value = { certChainPem: parsed.certChainPem, caBundlePem: parsed.caBundlePem };
        this.cached = { value, at: this.now() };
        return value;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  async controllerCaBundle(): Promise<string[]> {
    return pemCertificates((await this.serverIdentity()).caBundlePem);
  }

  /** `AuthenticatorCertificateVouching`: pki-enrollment's verdict, or 503 when it cannot give one. */
  async vouchesFor(certPem: string): Promise<boolean> {
    const request: VerifyClientCertificateRequest = {
      chainPem: pemCertificates(certPem).slice(0, 10),
      purpose: 'authenticator',
    };
    if (request.chainPem.length === 0) return false;
    try {
      return (await callService(this.bus, 'pki-enrollment', pki.verifyClientCertificate, request, { timeoutMs: 5_000 }))
        .trusted;
    } catch (err) {
      this.logger.warn(
        { err: (err as Error).message },
        'certificate authenticator not checked: pki-enrollment did not answer',
      );
      throw new ApiError('SERVICE_UNAVAILABLE', 'the certificate could not be checked against the known CAs');
    }
  }

  async verifyWithPki(chainPem: string[]): Promise<VerifyClientCertificateResult | null> {
    const request: VerifyClientCertificateRequest = { chainPem: chainPem.slice(0, 10) };
    try {
      // A verdict of an unexpected shape is UNHANDLED (callService), so not trusted either.
      return await callService(this.bus, 'pki-enrollment', pki.verifyClientCertificate, request, { timeoutMs: 5_000 });
    } catch (err) {
      this.logger.info({ err: (err as Error).message }, 'client certificate not verified by pki-enrollment');
      return null;
    }
  }
}
