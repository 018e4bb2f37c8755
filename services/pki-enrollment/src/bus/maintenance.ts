import type { Database } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';
import type { RouterEnrollmentService } from '../domain/router-enrollment.ts';

/**
 * Service-wide maintenance calls used by inventory's fan-out operations (`/summary`,
 * `/database/*`): entity counts of this service, its integrity check and fix, its snapshot.
 * Each service lists here the tables it owns that `/summary` reports.
 */
export const summaryTables: Record<string, string> = {
  cas: 'cas',
  enrollments: 'enrollments',
  apiSessionCertificates: 'api_session_certificates',
};

export interface PkiMaintenanceDeps {
  routerEnrollments: RouterEnrollmentService;
}

export function maintenanceCalls(
  database: Database,
  deps?: PkiMaintenanceDeps,
): Record<string, (payload: unknown) => Promise<unknown>> {
  return maintenanceHandlers({
    service: 'pki-enrollment',
    database,
    summaryTables,
    ...(deps ? { integrity: (fix: boolean) => deps.routerEnrollments.checkIntegrity(fix) } : {}),
  });
}
