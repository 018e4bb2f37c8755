import { randomUUID } from 'node:crypto';
import { ApiError, type CreateAuthenticatorRequest } from '@ziti/contracts';
import { type Database, SecretBox, createUnitOfWork, migrate, openDatabase } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../src/app.ts';
import { CaService } from '../src/cas/cas.domain.ts';
import { ControllerPkiService } from '../src/controller-pki/controller-pki.domain.ts';
import { ENROLLMENT_CLAIM_MS, EnrollService } from '../src/enrollments/enroll.domain.ts';
import { EnrollmentJwtIssuer } from '../src/enrollments/enrollment-jwt.domain.ts';
import { EnrollmentService } from '../src/enrollments/enrollments.domain.ts';
import type { PkiStores, UnitOfWork } from '../src/shared/stores.ports.ts';
import {
  type RouterDirectory,
  RouterEnrollmentService,
  type RouterKind,
} from '../src/router-enrollments/router-enrollments.domain.ts';
import { PgPkiMaterialStore } from '../src/controller-pki/pki-material.store.ts';
import { PgCaStore } from '../src/cas/cas.store.ts';
import { PgEnrollmentStore } from '../src/enrollments/enrollments.store.ts';
import { PgSessionCertificateStore } from '../src/session-certificates/session-certificates.store.ts';
import { FakeCredentials } from './fake-credentials.ts';
import { makeCsr } from './support.ts';

/**
 * `/enroll` claims the enrollment and asks the owner of the credential (auth, or inventory for a
 * router) with no transaction open (docs/adr/0007). On PGlite, as under `npm start`, the database
 * has one connection: an owner that needs pki-enrollment while it is asked (as inventory does when
 * it creates a router at that moment) would wait forever if the enrollment held a transaction.
 */
let database: Database;
let work: UnitOfWork;
let clock = new Date();
const now = () => clock;
const credentials = new FakeCredentials();
let enrollments: EnrollmentService;
let enroll: EnrollService;
let routers: RouterEnrollmentService;

/** inventory as pki-enrollment sees it; each call can be held, failed, or made to call back. */
class FakeRouters implements RouterDirectory {
  readonly enrolledIds: string[] = [];
  failNext?: ApiError;
  gate?: Promise<void>;
  /** Runs while inventory is being asked, as inventory's own calls to pki-enrollment would. */
  during?: () => Promise<unknown>;

  async enrolled(input: { routerId: string; kind: RouterKind; fingerprint: string; certPem: string }): Promise<void> {
    await this.during?.();
    await this.gate;
    const err = this.failNext;
    this.failNext = undefined;
    if (err) throw err;
    this.enrolledIds.push(input.routerId);
  }
  async byFingerprint() {
    return null;
  }
  async certificateChanged(): Promise<void> {}
  async existingEdgeRouters(ids: string[]): Promise<Set<string>> {
    return new Set(ids);
  }
}
const directory = new FakeRouters();

/** Rejects when `work` has not settled after `ms` (a deadlock fails the test instead of hanging it). */
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

async function rejects(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

beforeAll(async () => {
  database = await openDatabase({ pgliteMemory: true });
  await migrate(database, migrations);
  const box = new SecretBox(SecretBox.generateSecret());
  const address = 'ctrl.example.test:1280';
  const pki = new ControllerPkiService(new PgPkiMaterialStore(database.db), box, { advertisedAddress: address });
  await pki.initialize();
  work = createUnitOfWork<PkiStores>(database, undefined, 'pki-enrollment', (tx, events) => ({
    cas: new PgCaStore(tx),
    enrollments: new PgEnrollmentStore(tx, box, events),
    sessionCertificates: new PgSessionCertificateStore(tx, now),
    events,
  }));
  const jwts = new EnrollmentJwtIssuer(pki, address);
  const cas = new CaService(work, jwts, pki, now);
  enrollments = new EnrollmentService(work, jwts, credentials, { durationMinutes: 180 }, now);
  enroll = new EnrollService(work, pki, cas, credentials, { identityCertDays: 365 }, now);
  routers = new RouterEnrollmentService(
    work,
    enrollments,
    pki,
    directory,
    { durationMinutes: 180, certDays: 365, issueWaitMs: 3_000 },
    now,
  );
  enroll.register(routers.erottModule());
}, 60_000);

afterAll(async () => {
  await database?.close();
});

async function routerCsrs(routerId: string) {
  const [client, server] = await Promise.all([makeCsr(`CN=${routerId}`), makeCsr(`CN=${routerId}`)]);
  return { certCsr: client.csrPem, serverCertCsr: server.csrPem };
}
const useToken = (token: string, body: Record<string, unknown>) =>
  enroll.enrollWithToken({ token, clientCertChain: [], body }, 'erott');
const pendingOf = async (routerId: string) => (await routers.pending([routerId])).get(routerId);

describe('router enrollment (erott) without a transaction held', () => {
  it('tells inventory with the database free: inventory may call pki-enrollment back meanwhile', async () => {
    const routerId = `r${randomUUID().slice(0, 8)}`;
    const other = `r${randomUUID().slice(0, 8)}`;
    const e = await routers.issue(routerId, 'edge');
    // inventory creating another router at this moment asks pki-enrollment for its enrollment
    directory.during = () => routers.issue(other, 'edge');
    try {
      const result = await within(10_000, useToken(e.token, await routerCsrs(routerId)));
      expect(result.kind).toBe('data');
    } finally {
      directory.during = undefined;
    }
    expect(directory.enrolledIds).toContain(routerId);
    expect(await pendingOf(routerId)).toBeUndefined();
    expect(await pendingOf(other)).toBeDefined();
  });

  it('lets one use of a token through at a time; a new enrollment of the router waits for it', async () => {
    const routerId = `r${randomUUID().slice(0, 8)}`;
    const e = await routers.issue(routerId, 'edge');
    const csrs = await routerCsrs(routerId);
    let open!: () => void;
    directory.gate = new Promise<void>((resolve) => (open = resolve));
    let asked!: () => void;
    const inventoryAsked = new Promise<void>((resolve) => (asked = resolve));
    directory.during = async () => asked();
    const first = useToken(e.token, csrs);
    await within(10_000, inventoryAsked);
    directory.during = undefined;

    // While inventory is being told: a second use is refused, the re-enrollment waits.
    expect((await rejects(within(10_000, useToken(e.token, csrs)))).code).toBe('INVALID_ENROLLMENT_TOKEN');
    let reissued = false;
    const reEnrollment = routers.issue(routerId, 'edge').then((x) => {
      reissued = true;
      return x;
    });
    expect(await within(10_000, enrollments.get(e.id))).toMatchObject({ token: e.token });
    expect(reissued).toBe(false);

    directory.gate = undefined;
    open();
    expect((await within(10_000, first)).kind).toBe('data');
    const next = await within(10_000, reEnrollment);
    // The re-enrollment landed after the enrollment: the router awaits enrollment with the new token only.
    expect((await pendingOf(routerId))?.id).toBe(next.id);
    expect(next.token).not.toBe(e.token);
    expect((await rejects(useToken(e.token, csrs))).code).toBe('INVALID_ENROLLMENT_TOKEN');
    expect((await within(10_000, useToken(next.token, await routerCsrs(routerId)))).kind).toBe('data');
  });

  it('keeps the enrollment when inventory fails or does not answer; drops it when the router is gone', async () => {
    const routerId = `r${randomUUID().slice(0, 8)}`;
    const e = await routers.issue(routerId, 'edge');
    const csrs = await routerCsrs(routerId);
    directory.failNext = new ApiError('SERVICE_UNAVAILABLE');
    expect((await rejects(useToken(e.token, csrs))).code).toBe('SERVICE_UNAVAILABLE');
    expect((await pendingOf(routerId))?.token).toBe(e.token);
    // bad CSRs never touch the enrollment
    expect((await rejects(useToken(e.token, { certCsr: csrs.certCsr }))).code).toBe('MISSING_OR_INVALID_CSR');
    directory.failNext = ApiError.notFound('edgeRouter', routerId);
    expect((await rejects(useToken(e.token, csrs))).code).toBe('INVALID_ENROLLMENT_TOKEN');
    expect(await pendingOf(routerId)).toBeUndefined();
  });

  it('lets a claim of a replica that died lapse; a new enrollment waits for a live claim only so long', async () => {
    const routerId = `r${randomUUID().slice(0, 8)}`;
    const e = await routers.issue(routerId, 'edge');
    const until = new Date(clock.getTime() + ENROLLMENT_CLAIM_MS);
    expect(await work((s) => s.enrollments.claim(e.id, e.token, until, clock))).toBe(true);
    expect((await rejects(useToken(e.token, await routerCsrs(routerId)))).code).toBe('INVALID_ENROLLMENT_TOKEN');
    const started = Date.now();
    expect((await rejects(within(10_000, routers.issue(routerId, 'edge')))).code).toBe('TIMEOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
    const saved = clock;
    clock = new Date(clock.getTime() + ENROLLMENT_CLAIM_MS + 1_000);
    try {
      expect((await within(10_000, useToken(e.token, await routerCsrs(routerId)))).kind).toBe('data');
    } finally {
      clock = saved;
    }
  });
});

describe('identity enrollment without a transaction held', () => {
  it('creates the credential at auth with the database free, once per token', async () => {
    const identityId = `i${randomUUID().slice(0, 8)}`;
    credentials.addIdentity(identityId);
    const e = await enrollments.create({
      method: 'ott',
      identityId,
      expiresAt: new Date(clock.getTime() + 3_600_000).toISOString(),
    });
    const create = credentials.createAuthenticator.bind(credentials);
    let seenDuring: unknown;
    credentials.createAuthenticator = async (input: CreateAuthenticatorRequest) => {
      // auth may read pki-enrollment meanwhile (one PGlite connection: free only if nothing is held)
      seenDuring = await within(5_000, enrollments.get(e.id));
      return create(input);
    };
    try {
      const csrs = await Promise.all([makeCsr('CN=a'), makeCsr('CN=b')]);
      const outcomes = await within(
        15_000,
        Promise.allSettled(
          csrs.map((c) => enroll.enrollWithToken({ token: e.token, csrPem: c.csrPem, clientCertChain: [] })),
        ),
      );
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      const failed = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
      expect((failed.reason as ApiError).code).toBe('INVALID_ENROLLMENT_TOKEN');
    } finally {
      credentials.createAuthenticator = create;
    }
    expect(seenDuring).toMatchObject({ id: e.id });
    expect((await rejects(enrollments.get(e.id))).code).toBe('NOT_FOUND');
  });
});
