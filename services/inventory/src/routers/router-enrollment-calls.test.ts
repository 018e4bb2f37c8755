import { ApiError } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../../../test/support/infra.ts';
import { inventoryDatabase } from '../../test/support.ts';
import type { RouterEnrollment, RouterKind } from '../shared/model.domain.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';
import { RouterService } from './routers.domain.ts';
import type { RouterEnrollments } from './routers.ports.ts';

/**
 * inventory asks pki-enrollment for router enrollments with no transaction open (docs/adr/0007).
 * On PGlite, as under `npm start`, inventory has one connection; pki-enrollment calls inventory
 * back while it enrolls a router, so a call made inside a transaction would wait forever. The
 * fake below calls back into inventory's database during every call it serves.
 */
let work: UnitOfWork;
let drop: () => Promise<void>;
let routers: RouterService;

class CallingBackEnrollments implements RouterEnrollments {
  readonly log: { call: 'issue' | 'revoke'; routerId: string; routerExisted: boolean }[] = [];
  failIssue?: ApiError;

  /** What pki-enrollment enrolling another router at this moment needs of inventory. */
  private async callBack(routerId: string): Promise<boolean> {
    return (await work((s) => s.routers.get(routerId))) !== null;
  }

  async issue(routerId: string, _kind: RouterKind): Promise<RouterEnrollment | null> {
    this.log.push({ call: 'issue', routerId, routerExisted: await this.callBack(routerId) });
    const err = this.failIssue;
    this.failIssue = undefined;
    if (err) throw err;
    const now = new Date();
    return { id: `e-${routerId}`, token: 't', jwt: 'j', createdAt: now, expiresAt: now };
  }
  async revoke(routerId: string): Promise<void> {
    this.log.push({ call: 'revoke', routerId, routerExisted: await this.callBack(routerId) });
  }
  async pending(): Promise<Map<string, RouterEnrollment>> {
    return new Map();
  }
}
const enrollments = new CallingBackEnrollments();

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not finished within ${ms} ms (deadlock?)`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function apiError(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

beforeAll(async () => {
  ({ work, drop } = await inventoryDatabase('pglite'));
  routers = new RouterService(work, enrollments);
}, 60_000);
afterAll(async () => {
  await drop?.();
});

const callsFor = (routerId: string) => enrollments.log.filter((l) => l.routerId === routerId);

describe('router enrollments asked with no transaction open', () => {
  it('create: the enrollment is issued before the router commits, and taken back when it does not', async () => {
    const name = uniqueName('er');
    const r = await within(5_000, routers.create('edge', { name }));
    expect(callsFor(r.id)).toEqual([{ call: 'issue', routerId: r.id, routerExisted: false }]);
    expect((await routers.get('edge', r.id)).name).toBe(name);

    const before = enrollments.log.length;
    expect((await apiError(within(5_000, routers.create('edge', { name })))).cause).toMatchObject({ field: 'name' });
    const [issued, revoked] = enrollments.log.slice(before);
    expect(issued).toMatchObject({ call: 'issue', routerExisted: false });
    expect(revoked).toEqual({ call: 'revoke', routerId: issued!.routerId, routerExisted: false });

    enrollments.failIssue = new ApiError('SERVICE_UNAVAILABLE');
    const refused = await apiError(within(5_000, routers.create('edge', { name: uniqueName('er') })));
    expect(refused.code).toBe('SERVICE_UNAVAILABLE');
  });

  it('delete: the enrollment is revoked once the router is gone', async () => {
    const r = await routers.create('edge', { name: uniqueName('er') });
    await within(5_000, routers.delete('edge', r.id));
    expect(callsFor(r.id).at(-1)).toEqual({ call: 'revoke', routerId: r.id, routerExisted: false });
    expect((await apiError(routers.get('edge', r.id))).code).toBe('NOT_FOUND');
  });

  it('re-enroll: the enrollment is issued first, then the router awaits enrollment; nothing changes when it fails', async () => {
    const r = await routers.create('edge', { name: uniqueName('er') });
    await routers.markEnrolled({ routerId: r.id, kind: 'edge', fingerprint: 'ab', certPem: 'pem' });
    enrollments.failIssue = new ApiError('SERVICE_UNAVAILABLE');
    expect((await apiError(within(5_000, routers.reEnroll(r.id)))).code).toBe('SERVICE_UNAVAILABLE');
    expect(await routers.get('edge', r.id)).toMatchObject({ isVerified: true, fingerprint: 'ab' });

    await within(5_000, routers.reEnroll(r.id));
    expect(await routers.get('edge', r.id)).toMatchObject({ isVerified: false, fingerprint: null, certPem: null });
    expect(callsFor(r.id).at(-1)).toEqual({ call: 'issue', routerId: r.id, routerExisted: true });

    const before = enrollments.log.length;
    expect((await apiError(routers.reEnroll('nope'))).code).toBe('NOT_FOUND');
    expect(enrollments.log.length).toBe(before); // pki-enrollment not asked for an unknown router
  });

  it('many at once complete on the one connection', async () => {
    const created = await within(
      20_000,
      Promise.all(Array.from({ length: 12 }, () => routers.create('edge', { name: uniqueName('er') }))),
    );
    await within(
      20_000,
      Promise.all([
        ...created.slice(0, 6).map((r) => routers.reEnroll(r.id)),
        ...created.slice(6).map((r) => routers.delete('edge', r.id)),
        ...Array.from({ length: 6 }, () => routers.create('edge', { name: uniqueName('er') })),
      ]),
    );
    for (const r of created.slice(6)) expect((await apiError(routers.get('edge', r.id))).code).toBe('NOT_FOUND');
  });
});
