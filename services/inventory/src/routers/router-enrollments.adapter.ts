import { type RouterEnrollmentInfo, routerEnrollmentCallContracts as routerEnrollment } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { RouterEnrollment, RouterKind } from '../shared/model.domain.ts';
import type { RouterEnrollments } from './routers.ports.ts';

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
