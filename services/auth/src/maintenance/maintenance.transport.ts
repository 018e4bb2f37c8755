import type { CallTable, Database, Db } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';
import type { AuthMaintenance } from './auth-maintenance.domain.ts';

/**
 * Service-wide maintenance calls used by inventory's fan-out operations (`/summary`,
 * `/database/*`): entity counts of this service, its integrity check and fix, its snapshot.
 * Each service lists here the tables it owns that `/summary` reports.
 */
export const summaryTables: Record<string, string> = {
  identities: 'identities',
  identityTypes: 'identity_types',
  authenticators: 'authenticators',
  authPolicies: 'auth_policies',
  externalJwtSigners: 'external_jwt_signers',
  mfas: 'mfa',
};

/**
 * auth's maintenance calls; its live-session count, its integrity check (Router identities against
 * inventory's edge routers, the read model of outstanding enrollments against pki-enrollment) and
 * its identity states are the domain's `AuthMaintenance`.
 */
export function maintenanceCalls(
  database: Database,
  maintenance?: Pick<AuthMaintenance<Db>, 'summaryCounts' | 'check' | 'identityStates'>,
): CallTable {
  return maintenanceHandlers({
    service: 'auth',
    database,
    summaryTables,
    ...(maintenance
      ? {
          summaryCounts: () => maintenance.summaryCounts(),
          integrity: (fix: boolean) => maintenance.check(fix),
          entityStates: { identity: (request, tx) => maintenance.identityStates(request, tx) },
        }
      : {}),
  });
}
