import type { EnrollmentState } from '@ziti/contracts';
import type { Enrollment } from '../shared/model.domain.ts';

/**
 * What `enrollment.created|updated|deleted` carry of an enrollment: who it enrolls, how and until
 * when — never its token or JWT, which are credentials and stay encrypted here (docs/adr/0007, 0012).
 */
export function enrollmentState(e: Enrollment): EnrollmentState {
  return {
    id: e.id,
    method: e.method,
    identityId: e.identityId,
    edgeRouterId: e.edgeRouterId,
    transitRouterId: e.transitRouterId,
    caId: e.caId,
    expiresAt: e.expiresAt.toISOString(),
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
  };
}
