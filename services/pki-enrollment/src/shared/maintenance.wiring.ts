import type { CallTable } from '@ziti/platform';
import { enrollmentStatesPage } from '../enrollments/enrollments.store.ts';
import type { RouterEnrollmentService } from '../router-enrollments/router-enrollments.domain.ts';
import type { PkiCore } from './core.wiring.ts';
import { PkiMaintenance } from './maintenance.domain.ts';
import { pgMaintenance } from './maintenance.store.ts';
import { maintenanceCalls } from './maintenance.transport.ts';

/** pki-enrollment's maintenance calls: its tables, router enrollments' integrity, its enrollment states. */
export const maintenanceWiring = (core: PkiCore, routerEnrollments: RouterEnrollmentService): CallTable =>
  maintenanceCalls(pgMaintenance(core.database, new PkiMaintenance(routerEnrollments, enrollmentStatesPage)));
