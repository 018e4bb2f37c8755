import type { CallTable, Database, Db } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';
import type { PkiMaintenance } from './maintenance.domain.ts';

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

/**
 * pki-enrollment's maintenance calls; its integrity check and its enrollments' states (read in the
 * platform's snapshot, `tx`) are the domain's `PkiMaintenance`.
 */
export function maintenanceCalls(
  database: Database,
  maintenance?: Pick<PkiMaintenance<Db>, 'check' | 'enrollmentStates'>,
): CallTable {
  return maintenanceHandlers({
    service: 'pki-enrollment',
    database,
    summaryTables,
    ...(maintenance
      ? {
          integrity: (fix: boolean) => maintenance.check(fix),
          entityStates: {
            enrollment: (request, tx) => maintenance.enrollmentStates(request, tx),
          },
        }
      : {}),
  });
}
