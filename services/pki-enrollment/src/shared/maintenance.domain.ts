import type { EnrollmentState, EntityStatesRequest, IntegrityResult } from '@ziti/contracts';
import type { RouterEnrollmentService } from '../router-enrollments/router-enrollments.domain.ts';

/**
 * One `entityStates` page of enrollment states in bytewise id order (or the given ids), read
 * through `tx`, a transaction the caller opened (the platform's, at its event position; opaque here).
 */
export type EnrollmentStatePages<Tx> = (tx: Tx, request: EntityStatesRequest) => Promise<EnrollmentState[]>;

/**
 * What pki-enrollment's service-wide maintenance calls answer besides the platform's own: its
 * integrity check (router enrollments against inventory's routers) and its enrollments'
 * non-secret states, as `enrollment.*` carry them: what auth's read model of outstanding
 * enrollments is rebuilt from (docs/adr/0012).
 */
export class PkiMaintenance<Tx> {
  constructor(
    private readonly routerEnrollments: Pick<RouterEnrollmentService, 'checkIntegrity'>,
    private readonly enrollmentPages: EnrollmentStatePages<Tx>,
  ) {}

  check(fix: boolean): Promise<IntegrityResult[]> {
    return this.routerEnrollments.checkIntegrity(fix);
  }

  enrollmentStates(request: EntityStatesRequest, tx: Tx): Promise<EnrollmentState[]> {
    return this.enrollmentPages(tx, request);
  }
}
