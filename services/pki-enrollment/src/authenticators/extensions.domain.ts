import { ApiError } from '@ziti/contracts';
import type { CaService } from '../cas/cas.domain.ts';
import type { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import { type EnrollmentService, assertFutureExpiry } from '../enrollments/enrollments.domain.ts';
import type { Enrollment } from '../shared/model.domain.ts';
import { parsePemChain } from '@ziti/x509';
import { signCsr } from '@ziti/x509';
import type { CredentialPort } from '../shared/credentials.ports.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';
import { MAX_PRESENTED_CHAIN, tryVerifyPresentedChain } from '../shared/trust.domain.ts';

const cannotUpdate = (message: string) =>
  new ApiError('CAN_NOT_UPDATE_AUTHENTICATOR', { code: 'CAN_NOT_UPDATE_AUTHENTICATOR', message });

/**
 * The life of a certificate authenticator after enrollment: extension (a new certificate from a CSR,
 * the old one valid until the new one is confirmed) and reverting any authenticator to an enrollment.
 */
export class ExtensionService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly pki: ControllerPkiService,
    private readonly cas: CaService,
    private readonly enrollments: EnrollmentService,
    private readonly credentials: CredentialPort,
    private readonly options: { identityCertDays: number },
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The caller's own certificate authenticator; another identity's is NOT_FOUND. */
  private async ownCertAuthenticator(identityId: string, authenticatorId: string) {
    const authenticator = await this.credentials.getAuthenticator(authenticatorId);
    if (authenticator.identityId !== identityId) throw ApiError.notFound('authenticator', authenticatorId);
    if (authenticator.method !== 'cert' || !authenticator.certPem || !authenticator.certFingerprint) {
      throw cannotUpdate('only certificate authenticators can be extended');
    }
    return authenticator;
  }

  /**
   * `extend`: the request must come over TLS with the authenticator's current certificate, which
   * the controller issued; the CSR is signed and kept beside the current certificate until verified.
   */
  async extend(input: {
    identityId: string;
    authenticatorId: string;
    clientCertChain: string[];
    csrPem: string;
  }): Promise<{ clientCert: string; ca: string }> {
    const chain = input.clientCertChain.slice(0, MAX_PRESENTED_CHAIN);
    if (chain.length === 0)
      throw new ApiError('UNAUTHORIZED', {
        code: 'UNAUTHORIZED',
        message: 'the current client certificate must be presented',
      });
    const authenticator = await this.ownCertAuthenticator(input.identityId, input.authenticatorId);
    const presented = new Set(
      chain.flatMap((pem) => {
        try {
          return parsePemChain(pem).map((c) => c.fingerprint);
        } catch {
          return [];
        }
      }),
    );
    if (!presented.has(authenticator.certFingerprint!)) {
      throw new ApiError('UNAUTHORIZED', {
        code: 'UNAUTHORIZED',
        message: 'the presented certificate is not the one of this authenticator',
      });
    }
    // Only certificates this controller issued are extended (not those of third-party CAs).
    const issued = await tryVerifyPresentedChain([authenticator.certPem!], this.pki.serverIdentity().caBundlePem, {
      usage: 'clientAuth',
      tolerateExpiry: true,
      now: this.now(),
    });
    if (!issued) throw cannotUpdate('the certificate of this authenticator was not issued by this controller');
    const signer = this.pki.issuer();
    const certPem = await signCsr(signer, input.csrPem, {
      kind: 'client',
      validityDays: this.options.identityCertDays,
      now: this.now(),
    });
    await this.credentials.stageCertificate({
      authenticatorId: authenticator.id,
      identityId: input.identityId,
      certPem,
    });
    return { clientCert: certPem, ca: this.pki.serverIdentity().caBundlePem };
  }

  /** `extend-verify`: the client shows it holds the new certificate; from now on only it is valid. */
  async verifyExtension(input: { identityId: string; authenticatorId: string; clientCertPem: string }): Promise<void> {
    const authenticator = await this.ownCertAuthenticator(input.identityId, input.authenticatorId);
    if (!authenticator.unverifiedCertPem || !authenticator.unverifiedCertFingerprint) {
      throw cannotUpdate('the authenticator has no extension waiting for verification');
    }
    let fingerprint: string | undefined;
    try {
      const certs = parsePemChain(input.clientCertPem);
      fingerprint = certs.length === 1 ? certs[0]!.fingerprint : undefined;
    } catch {
      fingerprint = undefined;
    }
    if (fingerprint === undefined || fingerprint !== authenticator.unverifiedCertFingerprint) {
      throw new ApiError('INVALID_CLIENT_CERT', {
        code: 'INVALID_CLIENT_CERT',
        message: 'clientCert is not the certificate issued by the extension',
      });
    }
    await this.credentials.replaceCertificate({
      authenticatorId: authenticator.id,
      identityId: input.identityId,
      fingerprint,
    });
  }

  /**
   * `POST /authenticators/{id}/re-enroll`: the authenticator becomes an enrollment of its kind
   * (updb → updb with its username, a controller certificate → ott, a CA's → ottca).
   */
  async reEnroll(authenticatorId: string, expiresAtText: string | undefined): Promise<Enrollment> {
    const expiresAt = assertFutureExpiry(expiresAtText, this.now());
    const authenticator = await this.credentials.getAuthenticator(authenticatorId);
    let spec: { method: 'ott' | 'ottca' | 'updb'; caId?: string; username?: string };
    if (authenticator.method === 'updb') {
      spec = { method: 'updb', username: authenticator.username ?? '' };
    } else {
      const caId = await this.issuingCa(authenticator.caId, authenticator.certPem);
      spec = caId ? { method: 'ottca', caId } : { method: 'ott' };
    }
    const enrollment = await this.enrollments.build({
      method: spec.method,
      identityId: authenticator.identityId,
      caId: spec.caId ?? null,
      username: spec.username ?? null,
      expiresAt,
    });
    await this.work((s) => s.enrollments.insert(enrollment));
    try {
      await this.credentials.deleteAuthenticator(authenticator.id);
    } catch (err) {
      await this.work((s) => s.enrollments.delete(enrollment.id));
      throw err;
    }
    return enrollment;
  }

  /** The CA a certificate authenticator came through: the one recorded, else one its certificate verifies to. */
  private async issuingCa(recorded: string | null, certPem: string | null): Promise<string | undefined> {
    if (recorded && (await this.work((s) => s.cas.get(recorded)))) return recorded;
    if (!certPem) return undefined;
    const found = await this.cas.findVouchingCa([certPem], () => true, { tolerateExpiry: true });
    return found?.ca.id;
  }
}
