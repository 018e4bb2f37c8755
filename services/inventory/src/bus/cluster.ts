import {
  type IntegrityResult,
  type Owner,
  type RouterEnrollmentInfo,
  maintenanceCallContracts as maintenance,
  routerEnrollmentCallContracts as routerEnrollment,
} from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { ServiceMaintenance } from '../domain/database-maintenance.ts';
import type { RouterEnrollment, RouterKind } from '../domain/model.ts';
import type { IdentityDirectory } from '../domain/ports.ts';
import type { RouterEnrollments } from '../domain/routers.ts';

/** Every service that owns a database, in the order their results are listed. */
export const databaseOwners = ['auth', 'pki-enrollment', 'policy', 'inventory'] as const satisfies readonly Exclude<
  Owner,
  'gateway'
>[];

type DatabaseOwner = (typeof databaseOwners)[number];

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

/** Asks auth, the owner of identities, which of a set of ids exist. */
export class BusIdentityDirectory implements IdentityDirectory {
  constructor(private readonly bus: Bus) {}

  async existing(ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += 500) {
      const reply = await callService(
        this.bus,
        'auth',
        maintenance.entityStates,
        { type: 'identity', ids: unique.slice(i, i + 500) },
        { timeoutMs: 10_000 },
      );
      for (const s of reply.states) found.add(String(s.id));
    }
    return found;
  }
}

const enrollmentOf = (e: RouterEnrollmentInfo): RouterEnrollment => ({
  id: e.id,
  token: e.token,
  jwt: e.jwt,
  createdAt: new Date(e.createdAt),
  expiresAt: new Date(e.expiresAt),
});

/** Router enrollments, owned by pki-enrollment. */
export class BusRouterEnrollments implements RouterEnrollments {
  constructor(private readonly bus: Bus) {}

  async issue(routerId: string, kind: RouterKind): Promise<RouterEnrollment | null> {
    return enrollmentOf(
      await callService(this.bus, 'pki-enrollment', routerEnrollment.issue, { routerId, kind }, { timeoutMs: 10_000 }),
    );
  }

  async revoke(routerId: string): Promise<void> {
    await callService(this.bus, 'pki-enrollment', routerEnrollment.revoke, { routerId }, { timeoutMs: 10_000 });
  }

  async pending(routerIds: string[]): Promise<Map<string, RouterEnrollment>> {
    const out = new Map<string, RouterEnrollment>();
    for (let i = 0; i < routerIds.length; i += 1000) {
      const reply = await callService(
        this.bus,
        'pki-enrollment',
        routerEnrollment.pending,
        { routerIds: routerIds.slice(i, i + 1000) },
        { timeoutMs: 10_000 },
      );
      for (const [id, e] of Object.entries(reply.enrollments)) out.set(id, enrollmentOf(e));
    }
    return out;
  }
}
