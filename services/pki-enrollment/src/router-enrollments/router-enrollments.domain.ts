import { zitiqlString } from '@ziti/zitiql/literal';
import { ApiError, type IntegrityResult } from '@ziti/contracts';
import type { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import type { EnrollRequest, EnrollmentModule } from '../enrollments/enroll.domain.ts';
import type { EnrollmentService } from '../enrollments/enrollments.domain.ts';
import type { Enrollment } from '../shared/model.domain.ts';
import { fingerprint, parsePemChain } from '@ziti/x509';
import { parseCsr, signCsr } from '@ziti/x509';
import type { PkiStores, UnitOfWork } from '../shared/stores.ports.ts';
import { MAX_PRESENTED_CHAIN, tryVerifyPresentedChain } from '../shared/trust.domain.ts';

export type RouterKind = 'edge' | 'transit';

/** What pki-enrollment needs from inventory, which owns routers. */
export interface RouterDirectory {
  /** The router completed its enrollment with this client certificate (NOT_FOUND when it is gone). */
  enrolled(input: { routerId: string; kind: RouterKind; fingerprint: string; certPem: string }): Promise<void>;
  /** The router whose current client certificate has this fingerprint. */
  byFingerprint(
    fingerprint: string,
  ): Promise<{ id: string; name: string; kind: RouterKind; isVerified: boolean } | null>;
  /** Replaces the router's certificate, only while `previousFingerprint` is still its current one. */
  certificateChanged(input: {
    routerId: string;
    previousFingerprint: string;
    fingerprint: string;
    certPem: string;
  }): Promise<void>;
  /** Which of these edge router ids still exist. */
  existingEdgeRouters(ids: string[]): Promise<Set<string>>;
}

export interface RouterEnrollmentOptions {
  /** Lifetime of a router enrollment (the reference uses the identity duration, ZITI-FACTS §8.1). */
  durationMinutes: number;
  /** Validity of the client and server certificates issued to routers. */
  certDays: number;
  /**
   * How long a new enrollment waits for the router's current one to stop being used (default 5 s,
   * inside inventory's 10 s budget for the call; a use takes one call to inventory).
   */
  issueWaitMs?: number;
}

export interface RouterCertificates {
  /** The controller CA bundle the router should trust. */
  ca: string;
  /** Client certificate + intermediates. */
  cert: string;
  /** Server certificate + intermediates. */
  serverCert: string;
}

const unauthorized = (message: string) => new ApiError('UNAUTHORIZED', { code: 'UNAUTHORIZED', message });
const missingCsr = (message: string) =>
  new ApiError('MISSING_OR_INVALID_CSR', { code: 'MISSING_OR_INVALID_CSR', message });
const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : undefined);

/** The two CSRs of a router request: the names routers send, or the spec's (`clientCsr`, `serverCsr`). */
export function routerCsrs(body: Record<string, unknown> | undefined): { clientCsr: string; serverCsr: string } {
  const clientCsr = text(body?.certCsr) ?? text(body?.clientCsr);
  const serverCsr = text(body?.serverCertCsr) ?? text(body?.serverCsr);
  if (!clientCsr || !serverCsr)
    throw missingCsr('a router enrollment needs both a client CSR (certCsr) and a server CSR (serverCertCsr)');
  return { clientCsr, serverCsr };
}

/**
 * Router enrollment (ZITI-FACTS §8.2): an `erott` enrollment per edge router, issued when inventory
 * creates or re-enrolls it; `/enroll` with its token signs the router's client CSR (whose common
 * name must be the router id) and server CSR (its SANs kept) and tells inventory the router is
 * verified; `/enroll/extend/router` re-issues both certificates to a router presenting its current
 * one, which stops being accepted at once.
 */
export class RouterEnrollmentService {
  private readonly options: Required<RouterEnrollmentOptions>;

  constructor(
    private readonly work: UnitOfWork,
    private readonly enrollments: EnrollmentService,
    private readonly pki: ControllerPkiService,
    private readonly routers: RouterDirectory,
    options: RouterEnrollmentOptions,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.options = { issueWaitMs: 5_000, ...options };
  }

  private static filterFor(routerIds: string[]): string {
    const list = routerIds.map(zitiqlString).join(', ');
    return `(edgeRouter in [${list}] or transitRouter in [${list}]) limit none`;
  }

  private async routerEnrollments(s: PkiStores, routerIds: string[]): Promise<Enrollment[]> {
    if (routerIds.length === 0) return [];
    return (await s.enrollments.list({ filter: RouterEnrollmentService.filterFor(routerIds) })).items;
  }

  /**
   * A new enrollment for the router; any it had is replaced (its token stops working). While the
   * current one is being used (claimed by `/enroll`, which is telling inventory the router is
   * enrolled) the new one waits for that to end, so a re-enrollment always lands after an
   * enrollment it overlaps and the router ends awaiting enrollment with this token. Nothing is
   * held while waiting (the enrollment needs inventory, which may be the caller).
   */
  async issue(routerId: string, kind: RouterKind): Promise<Enrollment> {
    const issuedAt = this.now();
    const expiresAt = new Date(issuedAt.getTime() + this.options.durationMinutes * 60_000);
    const enrollment = await this.enrollments.build({
      issuedAt,
      method: kind === 'edge' ? 'erott' : 'trott',
      ...(kind === 'edge' ? { edgeRouterId: routerId } : { transitRouterId: routerId }),
      expiresAt,
      idKind: 'short',
    });
    const deadline = Date.now() + this.options.issueWaitMs;
    for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
      const issued = await this.work(async (s) => {
        if (!(await s.enrollments.clearRouter(routerId, this.now()))) return false;
        await s.enrollments.insert(enrollment);
        return true;
      }).catch((err: unknown) => {
        // Another replica issued one for the router at the same moment (one per router): again.
        if (err instanceof ApiError && err.code === 'ENROLLMENT_EXISTS') return false;
        throw err;
      });
      if (issued) return enrollment;
      if (Date.now() >= deadline) {
        throw new ApiError('TIMEOUT', {
          code: 'TIMEOUT',
          message: `the enrollment of router ${routerId} is being used; try again`,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  async revoke(routerId: string): Promise<void> {
    await this.work(async (s) => {
      for (const old of await this.routerEnrollments(s, [routerId])) await s.enrollments.delete(old.id);
    });
  }

  /** The pending enrollment of each router that has one, its JWT current. */
  async pending(routerIds: string[]): Promise<Map<string, Enrollment>> {
    if (routerIds.length === 0) return new Map();
    const page = await this.enrollments.list({ filter: RouterEnrollmentService.filterFor(routerIds) });
    return new Map(page.items.map((e) => [(e.edgeRouterId ?? e.transitRouterId)!, e]));
  }

  private async sign(
    routerId: string,
    clientCsr: string,
    serverCsr: string,
  ): Promise<{ clientPem: string; serverPem: string }> {
    const csr = await parseCsr(clientCsr);
    if (csr.commonName !== routerId) {
      throw new ApiError('EDGE_ROUTER_ENROLL_COMMON_NAME_INVALID', {
        code: 'EDGE_ROUTER_ENROLL_COMMON_NAME_INVALID',
        message: `the common name of the client CSR must be the router id ${routerId}, not ${csr.commonName ?? '(none)'}`,
      });
    }
    const signer = this.pki.issuer();
    const now = this.now();
    const clientPem = await signCsr(signer, clientCsr, { kind: 'client', validityDays: this.options.certDays, now });
    const serverPem = await signCsr(signer, serverCsr, { kind: 'server', validityDays: this.options.certDays, now });
    return { clientPem, serverPem };
  }

  private certificates(clientPem: string, serverPem: string): RouterCertificates {
    const chain = this.pki.issuer().issuingChainPem;
    return { ca: this.pki.serverIdentity().caBundlePem, cert: clientPem + chain, serverCert: serverPem + chain };
  }

  /**
   * The `erott` method of `/enroll`: the CSRs are signed before the enrollment is claimed; once it
   * is, inventory is told the router is enrolled (no transaction is open here meanwhile).
   */
  erottModule(): EnrollmentModule {
    return {
      method: 'erott',
      prepare: async (enrollment: Enrollment, request: EnrollRequest) => {
        const routerId = enrollment.edgeRouterId;
        if (!routerId)
          throw new ApiError('INVALID_ENROLLMENT_TOKEN', {
            code: 'INVALID_ENROLLMENT_TOKEN',
            message: 'the enrollment token is not valid',
          });
        const { clientCsr, serverCsr } = routerCsrs(request.body);
        const { clientPem, serverPem } = await this.sign(routerId, clientCsr, serverCsr);
        return async () => {
          try {
            await this.routers.enrolled({
              routerId,
              kind: 'edge',
              fingerprint: fingerprint(clientPem),
              certPem: clientPem,
            });
          } catch (err) {
            if (err instanceof ApiError && err.code === 'NOT_FOUND') {
              throw new ApiError('INVALID_ENROLLMENT_TOKEN', {
                code: 'INVALID_ENROLLMENT_TOKEN',
                message: 'the router of this enrollment no longer exists',
              });
            }
            throw err;
          }
          return { kind: 'data', data: { ...this.certificates(clientPem, serverPem) } };
        };
      },
    };
  }

  /** `/enroll/extend/router`: new certificates for the router that presents its current one. */
  async extend(input: {
    clientCertChain: string[];
    body: Record<string, unknown> | undefined;
  }): Promise<RouterCertificates> {
    const chain = input.clientCertChain.slice(0, MAX_PRESENTED_CHAIN);
    if (chain.length === 0) throw unauthorized('the router must present its current client certificate');
    const verified = await tryVerifyPresentedChain(chain, this.pki.serverIdentity().caBundlePem, {
      usage: 'clientAuth',
      now: this.now(),
    });
    if (!verified) throw unauthorized('the client certificate was not issued by this controller or is no longer valid');
    let presented: string;
    try {
      presented = parsePemChain(chain[0]!)[0]!.fingerprint;
    } catch {
      throw unauthorized('the client certificate could not be read');
    }
    const router = await this.routers.byFingerprint(presented);
    if (!router || !router.isVerified)
      throw unauthorized('the client certificate is not the current certificate of a router');
    const { clientCsr, serverCsr } = routerCsrs(input.body);
    const { clientPem, serverPem } = await this.sign(router.id, clientCsr, serverCsr);
    await this.routers.certificateChanged({
      routerId: router.id,
      previousFingerprint: presented,
      fingerprint: fingerprint(clientPem),
      certPem: clientPem,
    });
    return this.certificates(clientPem, serverPem);
  }

  /** Edge router enrollments whose router inventory no longer has; removed when fixing. */
  async checkIntegrity(fix: boolean): Promise<IntegrityResult[]> {
    const pending = await this.work(
      async (s) => (await s.enrollments.list({ filter: 'edgeRouter != null limit none' })).items,
    );
    const results: IntegrityResult[] = [];
    for (let i = 0; i < pending.length; i += 500) {
      const batch = pending.slice(i, i + 500);
      const existing = await this.routers.existingEdgeRouters(batch.map((e) => e.edgeRouterId!));
      for (const e of batch) {
        if (existing.has(e.edgeRouterId!)) continue;
        if (fix) await this.work((s) => s.enrollments.delete(e.id));
        results.push({
          description: `enrollment ${e.id} of edge router ${e.edgeRouterId}, which no longer exists`,
          fixed: fix,
        });
      }
    }
    return results;
  }
}
