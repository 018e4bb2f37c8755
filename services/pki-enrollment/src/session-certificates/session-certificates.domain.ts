import { ApiError } from '@ziti/contracts';
import { shortId } from '@ziti/platform/ids';
import type { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import type { ListInput, ListPage, SessionCertificate } from '../shared/model.domain.ts';
import { parsePemChain } from '@ziti/x509';
import { signCsr } from '@ziti/x509';
import type { UnitOfWork } from '../shared/stores.ports.ts';

/** The reference issues API-session certificates for 12 hours (ZITI-FACTS §5.1). */
export const SESSION_CERTIFICATE_HOURS = 12;
/** Live certificates one API session may hold (bounds the signing work one session can ask for). */
export const MAX_SESSION_CERTIFICATES = 50;

export interface SessionOwner {
  identityId: string;
  apiSessionId: string;
}

/** Ephemeral client certificates of an API session: gone at logout or after 12 hours. */
export class SessionCertificateService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly pki: ControllerPkiService,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(owner: SessionOwner, input: ListInput): Promise<ListPage<SessionCertificate>> {
    return this.work((s) => s.sessionCertificates.list(input, owner.apiSessionId));
  }

  async get(owner: SessionOwner, id: string): Promise<SessionCertificate> {
    const found = await this.work((s) => s.sessionCertificates.get(id, owner.apiSessionId));
    if (!found) throw ApiError.notFound('apiSessionCertificate', id);
    return found;
  }

  /** Signs the CSR for 12 hours; returns the record and the CA bundle to trust. */
  async create(owner: SessionOwner, csrPem: string): Promise<{ certificate: SessionCertificate; cas: string }> {
    const now = this.now();
    const live = await this.work(async (s) => {
      await s.sessionCertificates.deleteExpired(now);
      return s.sessionCertificates.countBySession(owner.apiSessionId);
    });
    if (live >= MAX_SESSION_CERTIFICATES) {
      throw new ApiError('RATE_LIMITED', {
        code: 'RATE_LIMITED',
        message: `an API session may hold at most ${MAX_SESSION_CERTIFICATES} certificates`,
      });
    }
    const certPem = await signCsr(this.pki.issuer(), csrPem, {
      kind: 'client',
      validityDays: SESSION_CERTIFICATE_HOURS / 24,
      now,
    });
    const cert = parsePemChain(certPem)[0]!;
    const certificate: SessionCertificate = {
      id: shortId(),
      apiSessionId: owner.apiSessionId,
      identityId: owner.identityId,
      subject: cert.subject,
      fingerprint: cert.fingerprint,
      certPem,
      validFrom: cert.notBefore,
      validTo: cert.notAfter,
      tags: {},
      createdAt: now,
      updatedAt: now,
    };
    await this.work((s) => s.sessionCertificates.insert(certificate));
    return { certificate, cas: this.pki.serverIdentity().caBundlePem };
  }

  async delete(owner: SessionOwner, id: string): Promise<void> {
    await this.work(async (s) => {
      if (!(await s.sessionCertificates.delete(id, owner.apiSessionId)))
        throw ApiError.notFound('apiSessionCertificate', id);
    });
  }

  /** Logout (`apiSession.deleted`): the session's certificates go with it. */
  async deleteForSession(apiSessionId: string): Promise<number> {
    return this.work((s) => s.sessionCertificates.deleteBySession(apiSessionId));
  }
}
