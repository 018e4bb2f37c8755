import { type PendingEnrollment, pkiEnrollmentCallContracts as pki } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { EnrollmentPort, EnrollmentRequestSpec } from '../credentials/credentials.domain.ts';

/** EnrollmentPort over the bus: pki-enrollment owns enrollments. */
export class BusEnrollmentPort implements EnrollmentPort {
  constructor(
    private readonly bus: Bus,
    private readonly timeoutMs = 10_000,
  ) {}

  async createForIdentity(identityId: string, specs: EnrollmentRequestSpec[]): Promise<string[]> {
    const result = await callService(
      this.bus,
      'pki-enrollment',
      pki.createIdentityEnrollments,
      { identityId, enrollments: specs },
      { timeoutMs: this.timeoutMs },
    );
    return result.ids;
  }

  async deleteForIdentity(identityId: string, ids: string[]): Promise<void> {
    await callService(
      this.bus,
      'pki-enrollment',
      pki.deleteIdentityEnrollments,
      { identityId, ids },
      {
        timeoutMs: this.timeoutMs,
      },
    );
  }

  async pendingFor(identityIds: string[]): Promise<Record<string, PendingEnrollment[]>> {
    if (identityIds.length === 0) return {};
    const result = await callService(
      this.bus,
      'pki-enrollment',
      pki.pendingEnrollments,
      { identityIds },
      {
        timeoutMs: this.timeoutMs,
      },
    );
    return result.enrollments;
  }
}
