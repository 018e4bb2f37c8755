import { type Database, type Db, type ServiceMaintenance, databaseMaintenance } from '@ziti/platform';
import type { PkiMaintenance } from './maintenance.domain.ts';

/** The tables pki-enrollment owns that `/summary` reports, each a table name with an optional `where` written in code. */
export const summaryTables: Record<string, string> = {
  cas: 'cas',
  enrollments: 'enrollments',
  apiSessionCertificates: 'api_session_certificates',
};

/**
 * pki-enrollment's maintenance over its database (the platform's `databaseMaintenance`); its
 * integrity check and its enrollments' states (read in the platform's snapshot, `tx`) are the
 * domain's `PkiMaintenance`.
 */
export function pgMaintenance(
  database: Database,
  maintenance?: Pick<PkiMaintenance<Db>, 'check' | 'enrollmentStates'>,
): ServiceMaintenance {
  return databaseMaintenance({
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
