import type { EnrollmentState } from '@ziti/contracts';
import type { CallTable, Database, Db } from '@ziti/platform';
import { entityStatesPage, maintenanceHandlers } from '@ziti/platform';
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
  /** One page of enrollment states (`entityStatesPage`'s condition), read through `tx`. */
  enrollmentStates: (tx: Db, page: { where: string; params: unknown[]; limit: number }) => Promise<EnrollmentState[]>;
}

export function maintenanceCalls(database: Database, deps?: PkiMaintenanceDeps): CallTable {
  return maintenanceHandlers({
    service: 'pki-enrollment',
    database,
    summaryTables,
    ...(deps
      ? {
          integrity: (fix: boolean) => deps.routerEnrollments.checkIntegrity(fix),
          // Enrollments' non-secret states, as `enrollment.*` carry them: what auth's read model of
          // outstanding enrollments is rebuilt from (docs/adr/0012).
          entityStates: {
            enrollment: (request, tx) => deps.enrollmentStates(tx, entityStatesPage(request)),
          },
        }
      : {}),
  });
}
