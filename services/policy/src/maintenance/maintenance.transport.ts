import type { CallTable, Database } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';
import type { PolicyIntegrity } from './policy-integrity.domain.ts';

/**
 * Service-wide maintenance calls used by inventory's fan-out operations (`/summary`,
 * `/database/*`): entity counts of this service, its integrity check and fix, its snapshot.
 * Each service lists here the tables it owns that `/summary` reports.
 */
export const summaryTables: Record<string, string> = {
  servicePolicies: 'service_policies',
  edgeRouterPolicies: 'edge_router_policies',
  serviceEdgeRouterPolicies: 'service_edge_router_policies',
  postureChecks: 'posture_checks',
  postureCheckTypes: 'posture_check_types',
  sessions: 'sessions',
  // API sessions live in Redis: auth counts them (policy knows only those it has heard of).
};

/**
 * policy's maintenance calls; its integrity check (read models against their owners, then derived
 * access) is the domain's `PolicyIntegrity`.
 */
export function maintenanceCalls(database: Database, integrity?: Pick<PolicyIntegrity, 'check'>): CallTable {
  return maintenanceHandlers({
    service: 'policy',
    database,
    summaryTables,
    ...(integrity ? { integrity: (fix: boolean) => integrity.check(fix) } : {}),
  });
}
