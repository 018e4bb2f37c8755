import { timingSafeEqual } from 'node:crypto';
import { ApiError, type CreateAuthenticatorRequest } from '@ziti/contracts';
import { shortId } from '@ziti/platform/ids';
import type { CaService } from '../cas/cas.domain.ts';
import type { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import { extractExternalId } from '../cas/external-id.domain.ts';
import { formatIdentityName } from '../cas/identity-name.domain.ts';
import { DEFAULT_IDENTITY_NAME_FORMAT, type Enrollment } from '../shared/model.domain.ts';
import { signCsr } from '@ziti/x509';
import type { CredentialPort } from '../shared/credentials.ports.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';
import { MAX_PRESENTED_CHAIN, presentedLeaf, tryVerifyPresentedChain } from '../shared/trust.domain.ts';

/** One `/enroll*` request as the transport read it (ZITI-FACTS §8.2). */
export interface EnrollRequest {
  /** The enrollment's token (query `token`, or `token` of a JSON body). */
  token?: string;
  /** A PEM CSR: the raw body, or `clientCsr` of a JSON body. */
  /** PEM text, or DER bytes (`application/pkcs10`). */
  csrPem?: string | Uint8Array;
  password?: string;
  /** `name` of a CA auto-enrollment body: the `[requestedName]` of the CA's name format. */
  requestedName?: string;
  /** The TLS client certificate chain, leaf first. */
  clientCertChain: string[];
  /** Any further JSON body (router methods read their CSRs from it). */
  body?: Record<string, unknown>;
}

/** What an enrollment produces: a certificate (ott), JSON data (routers) or nothing. */
export type EnrollResult =
  | { kind: 'certificate'; certPem: string; chainPem: string }
  | { kind: 'data'; data: Record<string, unknown> }
  | { kind: 'empty' };

/**
 * One enrollment method, in two steps so that no transaction is open while another service is
 * asked (docs/adr/0007). `prepare` checks the request and does the local work (CSR signing, chain
 * checks) before the enrollment is claimed; the step it returns hands the credential to its owner
 * (auth, or inventory for routers) once the enrollment is claimed. When that step succeeds the
 * enrollment is used up; when it fails the claim is released and the enrollment stays, unless it
 * failed with INVALID_ENROLLMENT_TOKEN (the identity or router is gone): then the enrollment goes.
 */
export interface EnrollmentModule {
  readonly method: string;
  prepare(enrollment: Enrollment, request: EnrollRequest): Promise<() => Promise<EnrollResult>>;
}

/**
 * How long a claim holds an enrollment: longer than any call to another service may take (their
 * timeouts are 10 s at most), so it only lapses when the replica that claimed it died.
 */
export const ENROLLMENT_CLAIM_MS = 60_000;

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface EnrollOptions {
  /** Validity of issued identity certificates (ZITI_IDENTITY_CERT_DAYS). */
  identityCertDays: number;
}

/**
 * The `/enroll` dispatch: the token names the enrollment and its method (only `ca` is taken from
 * the request); expired or used tokens are refused; the module of the method does the rest.
 * Router methods (erott, trott) plug in with `register`.
 */
export class EnrollService {
  private readonly modules = new Map<string, EnrollmentModule>();

  constructor(
    private readonly work: UnitOfWork,
    private readonly pki: ControllerPkiService,
    private readonly cas: CaService,
    private readonly credentials: CredentialPort,
    private readonly options: EnrollOptions,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.register(this.ottModule());
    this.register(this.ottcaModule());
    this.register(this.updbModule());
  }

  register(module: EnrollmentModule): void {
    this.modules.set(module.method, module);
  }

  /** The enrollment's credential at auth; an identity that is gone makes the token invalid. */
  private async createCredential(input: CreateAuthenticatorRequest): Promise<void> {
    try {
      await this.credentials.createAuthenticator(input);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'NOT_FOUND') {
        throw new ApiError('INVALID_ENROLLMENT_TOKEN', {
          code: 'INVALID_ENROLLMENT_TOKEN',
          message: 'the identity of this enrollment no longer exists',
        });
      }
      throw err;
    }
  }

  /**
   * Enrolls with a token. `expectedMethod` is the method a method-specific path implies
   * (`/enroll/ott`, …); a token of another kind is INVALID_ENROLLMENT_TOKEN.
   */
  async enrollWithToken(request: EnrollRequest, expectedMethod?: string): Promise<EnrollResult> {
    const token = request.token;
    if (!token)
      throw new ApiError('INVALID_ENROLLMENT_TOKEN', {
        code: 'INVALID_ENROLLMENT_TOKEN',
        message: 'an enrollment token is required',
      });
    if (!uuidPattern.test(token))
      throw ApiError.field('token', `token in query must be of type uuid: ${JSON.stringify(token)}`, token);
    const invalid = () =>
      new ApiError('INVALID_ENROLLMENT_TOKEN', {
        code: 'INVALID_ENROLLMENT_TOKEN',
        message: 'the enrollment token is not valid',
      });
    const enrollment = await this.work((s) => s.enrollments.findByToken(token));
    // Found by the token's hash; compare the token itself too, in constant time.
    const same =
      enrollment !== null &&
      enrollment.token.length === token.length &&
      timingSafeEqual(Buffer.from(enrollment.token), Buffer.from(token));
    if (!enrollment || !same || (expectedMethod !== undefined && enrollment.method !== expectedMethod)) throw invalid();
    if (enrollment.expiresAt.getTime() <= this.now().getTime()) {
      throw new ApiError('ENROLLMENT_EXPIRED', {
        code: 'ENROLLMENT_EXPIRED',
        message: `the enrollment expired at ${enrollment.expiresAt.toISOString()}`,
      });
    }
    const module = this.modules.get(enrollment.method);
    if (!module) {
      throw new ApiError('INVALID_ENROLL_METHOD', {
        code: 'INVALID_ENROLL_METHOD',
        message: `enrollment method ${enrollment.method} is not supported`,
      });
    }
    const complete = await module.prepare(enrollment, request);
    // One use at a time: the claim commits at once, so no transaction is held while the owner of
    // the credential is asked. A concurrent use of the same token finds it claimed (or gone).
    const now = this.now();
    const until = new Date(now.getTime() + ENROLLMENT_CLAIM_MS);
    if (!(await this.work((s) => s.enrollments.claim(enrollment.id, token, until, now)))) throw invalid();
    let result: EnrollResult;
    try {
      result = await complete();
    } catch (err) {
      const gone = err instanceof ApiError && err.code === 'INVALID_ENROLLMENT_TOKEN';
      // Best effort: a claim that can not be released lapses on its own.
      await this.work(async (s) => {
        if (gone) await s.enrollments.delete(enrollment.id);
        else await s.enrollments.release(enrollment.id);
      }).catch(() => undefined);
      throw err;
    }
    // Used up. Should the delete fail, the claim lapses and a second use is refused by the owner
    // (the identity has that authenticator, the router is verified); the credential stands.
    await this.work((s) => s.enrollments.delete(enrollment.id)).catch(() => undefined);
    return result;
  }

  private ottModule(): EnrollmentModule {
    return {
      method: 'ott',
      prepare: async (enrollment, request) => {
        if (!request.csrPem)
          throw new ApiError('COULD_NOT_PROCESS_CSR', {
            code: 'COULD_NOT_PROCESS_CSR',
            message: 'a PEM CSR is required',
          });
        const signer = this.pki.issuer();
        const certPem = await signCsr(signer, request.csrPem, {
          kind: 'client',
          validityDays: this.options.identityCertDays,
          now: this.now(),
        });
        return async () => {
          await this.createCredential({ identityId: enrollment.identityId!, method: 'cert', certPem });
          return { kind: 'certificate', certPem, chainPem: certPem + signer.issuingChainPem };
        };
      },
    };
  }

  private ottcaModule(): EnrollmentModule {
    return {
      method: 'ottca',
      prepare: async (enrollment, request) => {
        const caId = enrollment.caId;
        const ca = caId ? await this.work((s) => s.cas.get(caId)) : null;
        if (!ca || !ca.isVerified || !ca.isOttCaEnrollmentEnabled) {
          throw new ApiError('ENROLLMENT_CA_NOT_VALID', {
            code: 'ENROLLMENT_CA_NOT_VALID',
            message: `ca ${enrollment.caId ?? ''} does not allow OTT-CA enrollment`,
          });
        }
        const chain = request.clientCertChain.slice(0, MAX_PRESENTED_CHAIN);
        if (chain.length === 0) throw certFailed('a client certificate signed by the CA is required');
        if (!(await tryVerifyPresentedChain(chain, ca.certPem, { usage: 'clientAuth', now: this.now() }))) {
          throw certFailed(`the client certificate does not verify against ca ${ca.id}`);
        }
        const certPem = presentedLeaf(chain)!.pem;
        return async () => {
          await this.createCredential({ identityId: enrollment.identityId!, method: 'cert', certPem, caId: ca.id });
          return { kind: 'empty' };
        };
      },
    };
  }

  private updbModule(): EnrollmentModule {
    return {
      method: 'updb',
      prepare: async (enrollment, request) => {
        const password = request.password;
        if (!password) throw ApiError.field('password', 'password in body is required', password);
        // The username is the one the enrollment was created with; a body username is ignored.
        return async () => {
          await this.createCredential({
            identityId: enrollment.identityId!,
            method: 'updb',
            username: enrollment.username ?? '',
            password,
          });
          return { kind: 'empty' };
        };
      },
    };
  }

  /**
   * CA auto-enrollment: the first verified CA with auto-enrollment that the presented chain
   * verifies to creates an identity named by its format, with its roles, and either a certificate
   * authenticator or the external id its claim names.
   */
  async enrollWithCa(request: EnrollRequest): Promise<EnrollResult> {
    const chain = request.clientCertChain.slice(0, MAX_PRESENTED_CHAIN);
    const leaf = presentedLeaf(chain);
    if (!leaf) throw certFailed('a client certificate is required');
    const all = await this.work((s) => s.cas.all());
    if (!all.some((ca) => ca.isVerified && ca.isAutoCaEnrollmentEnabled)) {
      throw new ApiError('ENROLLMENT_NO_VALID_CAS', {
        code: 'ENROLLMENT_NO_VALID_CAS',
        message: 'no verified CA allows auto-enrollment',
      });
    }
    const found = await this.cas.findVouchingCa(chain, (ca) => ca.isVerified && ca.isAutoCaEnrollmentEnabled);
    if (!found) throw certFailed('the client certificate does not verify against any CA that allows auto-enrollment');
    const { ca } = found;
    let externalId: string | undefined;
    if (ca.externalIdClaim) {
      externalId = extractExternalId(ca.externalIdClaim, leaf);
      if (externalId === undefined) {
        throw new ApiError('MISSING_CERT_CLAIM', {
          code: 'MISSING_CERT_CLAIM',
          message: `the certificate has no claim at ${ca.externalIdClaim.location}`,
        });
      }
    }
    const identityId = shortId();
    const name = formatIdentityName(ca.identityNameFormat || DEFAULT_IDENTITY_NAME_FORMAT, {
      caName: ca.name,
      caId: ca.id,
      commonName: leaf.commonName ?? '',
      requestedName: request.requestedName ?? '',
      identityId,
    });
    await this.credentials.createIdentity({
      id: identityId,
      name: name.trim() || identityId,
      roleAttributes: ca.identityRoles,
      caId: ca.id,
      ...(externalId !== undefined ? { externalId } : { certPem: leaf.pem }),
    });
    return { kind: 'empty' };
  }
}

function certFailed(message: string): ApiError {
  return new ApiError('CERT_FAILED_VALIDATION', { code: 'CERT_FAILED_VALIDATION', message });
}
