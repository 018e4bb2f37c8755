import {
  type DatabaseOwner,
  type IntegrityResult,
  databaseOwners,
  maintenanceCallContracts as maintenance,
} from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { ServiceMaintenance } from './database-maintenance.ports.ts';

/** Every service that owns a database (the audit trail's too), in the order their results are listed. */
export { databaseOwners };

/** The maintenance calls of every service, over the bus (`ziti.rpc.<owner>.call.maintenance.*`). */
export class BusServiceMaintenance implements ServiceMaintenance {
  readonly services = databaseOwners;

  constructor(
    private readonly bus: Bus,
    private readonly timeouts = { summary: 10_000, integrity: 10 * 60_000, snapshot: 5 * 60_000 },
  ) {}

  async summaryCounts(service: string): Promise<Record<string, number>> {
    return callService(
      this.bus,
      service as DatabaseOwner,
      maintenance.summaryCounts,
      {},
      {
        timeoutMs: this.timeouts.summary,
      },
    );
  }

  async integrityCheck(service: string, fix: boolean): Promise<IntegrityResult[]> {
    const reply = await callService(
      this.bus,
      service as DatabaseOwner,
      maintenance.integrityCheck,
      { fix },
      {
        timeoutMs: this.timeouts.integrity,
      },
    );
    return reply.results;
  }

  async snapshot(service: string, label: string): Promise<string> {
    const reply = await callService(
      this.bus,
      service as DatabaseOwner,
      maintenance.snapshot,
      { label },
      {
        timeoutMs: this.timeouts.snapshot,
      },
    );
    return reply.path;
  }
}
