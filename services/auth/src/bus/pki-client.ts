import {
  type PendingEnrollment,
  createIdentityEnrollmentsResultSchema,
  pendingEnrollmentsResultSchema,
  pkiCallNames,
  subjects,
} from '@ziti/contracts';
import type { Bus } from '@ziti/platform';
import type { EnrollmentPort, EnrollmentRequestSpec } from '../domain/credential-service.ts';

/*
 * NOTE (auth engineer, issue 4): this file was created by the enrollment work at the same time as
 * mine and I overwrote it by mistake while adding the certificate client (now bus/pki-certificates.ts).
 * This is a reconstruction from the EnrollmentPort interface and the call contracts in
 * packages/contracts/src/bus.ts — please compare it with your version and keep yours.
 */

/** EnrollmentPort over the bus: pki-enrollment owns enrollments. */
export class BusEnrollmentPort implements EnrollmentPort {
  constructor(
    private readonly bus: Bus,
    private readonly timeoutMs = 10_000,
  ) {}

  async createForIdentity(identityId: string, specs: EnrollmentRequestSpec[]): Promise<string[]> {
    const raw = await this.bus.request(
      subjects.call('pki-enrollment', pkiCallNames.createIdentityEnrollments),
      { identityId, enrollments: specs },
      { timeoutMs: this.timeoutMs },
    );
    return createIdentityEnrollmentsResultSchema.parse(raw).ids;
  }

  async deleteForIdentity(identityId: string, ids: string[]): Promise<void> {
    await this.bus.request(
      subjects.call('pki-enrollment', pkiCallNames.deleteIdentityEnrollments),
      { identityId, ids },
      { timeoutMs: this.timeoutMs },
    );
  }

  async pendingFor(identityIds: string[]): Promise<Record<string, PendingEnrollment[]>> {
    if (identityIds.length === 0) return {};
    const raw = await this.bus.request(
      subjects.call('pki-enrollment', pkiCallNames.pendingEnrollments),
      { identityIds },
      { timeoutMs: this.timeoutMs },
    );
    return pendingEnrollmentsResultSchema.parse(raw).enrollments;
  }
}
