import type { Database } from '@ziti/platform';

/**
 * Service-wide maintenance calls used by inventory's fan-out operations (`/summary`,
 * `/database/*`): entity counts of this service, its integrity check and fix, its snapshot.
 * Each service lists here the tables it owns that `/summary` reports.
 */
export const summaryTables: Record<string, string> = {};

export function maintenanceCalls(_database: Database): Record<string, (payload: unknown) => Promise<unknown>> {
  return {};
}
