import type { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import type { EnrollmentService } from '../enrollments/enrollments.domain.ts';
import type { PkiCore } from '../shared/core.wiring.ts';
import { BusRouterDirectory } from './router-directory.adapter.ts';
import { RouterEnrollmentService } from './router-enrollments.domain.ts';
import { routerEnrollmentCalls } from './router-enrollments.transport.ts';

/** Router enrollment (erott): routers belong to inventory, their enrollments and certificates here. */
export function routerEnrollmentsWiring(
  core: PkiCore,
  d: { enrollments: EnrollmentService; pki: ControllerPkiService },
) {
  const routerEnrollments = new RouterEnrollmentService(
    core.work,
    d.enrollments,
    d.pki,
    new BusRouterDirectory(core.bus),
    { durationMinutes: core.config.enrollmentDurationMinutes, certDays: core.config.identityCertValidityDays },
  );
  return { routerEnrollments, calls: routerEnrollmentCalls(routerEnrollments) };
}
