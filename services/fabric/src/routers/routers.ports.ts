import type { AdmittableRouter, RouterPresenceReport } from '@ziti/contracts';

/** What fabric needs of inventory, which owns routers and records their presence. */
export interface RouterRegistry {
  admission(routerId: string): Promise<AdmittableRouter | null>;
  /** Whether it applied (false: a newer connection of the router was recorded meanwhile). */
  reportPresence(report: RouterPresenceReport): Promise<boolean>;
  /** Renews the leases of these connections; answers those inventory no longer holds as current. */
  renewLeases(
    replicaId: string,
    connections: { routerId: string; connectionId: string }[],
    leaseMs: number,
  ): Promise<{ routerId: string; connectionId: string }[]>;
}
