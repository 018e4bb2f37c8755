import { type Database, type ServiceMaintenance, databaseMaintenance } from '@ziti/platform';
import type { PolicyIntegrity } from './policy-integrity.domain.ts';

/** The tables policy owns that `/summary` reports, each a table name with an optional `where` written in code. */
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
 * policy's maintenance over its database (the platform's `databaseMaintenance`); its integrity
 * check (read models against their owners, then derived access) is the domain's `PolicyIntegrity`.
 */
export function pgMaintenance(database: Database, integrity?: Pick<PolicyIntegrity, 'check'>): ServiceMaintenance {
  return databaseMaintenance({
    service: 'policy',
    database,
    summaryTables,
    ...(integrity ? { integrity: (fix: boolean) => integrity.check(fix) } : {}),
  });
}
