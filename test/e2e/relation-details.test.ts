import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { startEmbedded } from '../support/embedded.ts';
import { uniqueName } from '../support/infra.ts';

/**
 * The association lists that show identities and edge routers answer each one exactly as its own
 * detail does (issue 31), as the reference 1.1.9 does: `GET /services/{id}/identities` items are
 * `GET /identities/{id}` (authenticators, auth policy name, `hasApiSession` of a logged-in identity,
 * MFA, enrollment, hosting costs), the edge-router lists' items are `GET /edge-routers/{id}`
 * (certificates, enrollment fields of an unverified router, presence). policy answers the page;
 * auth and inventory answer the details, and an owner that is down is a 503, never a 500. Both
 * ways of running: the cluster (separate processes on NATS) and `npm start` (one process, the
 * in-process bus).
 */
interface Controller {
  call: E2e['call'];
  adminToken: string;
  stop: () => Promise<void>;
}
const running: { name: string; start: () => Promise<Controller> }[] = [
  { name: 'the cluster', start: async () => (e = await startE2e()) },
  { name: 'npm start', start: () => startEmbedded() },
];
/** The cluster, for what stops a service. */
let e: E2e;
let c: Controller;
let user: { id: string; username: string; token: string; authenticatorId: string };
const n: Record<string, string> = {};

type Entity = Record<string, unknown> & { id: string };

const admin = (req: Parameters<E2e['call']>[1]) => c.call('management', { ...req, token: c.adminToken });

/** An identity with a updb authenticator, logged in. */
async function createUser() {
  const username = uniqueName('user');
  const password = `pw-${uniqueName('x')}`;
  const id = await create('/identities', { name: uniqueName('id'), type: 'User', isAdmin: false });
  const authenticatorId = await create('/authenticators', { method: 'updb', identityId: id, username, password });
  const login = await c.call('management', {
    method: 'POST',
    path: '/authenticate?method=password',
    body: { username, password },
  });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${login.text}`);
  return { id, username, token: login.json.data.token as string, authenticatorId };
}

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.json.data.id as string;
}

async function items(path: string): Promise<Entity[]> {
  const res = await admin({ path });
  expect(res.status, `${path} ${res.text}`).toBe(200);
  return res.json.data as Entity[];
}

async function detail(path: string): Promise<Entity> {
  const res = await admin({ path });
  expect(res.status, `${path} ${res.text}`).toBe(200);
  return res.json.data as Entity;
}

async function createNetwork() {
  // An identity with a updb authenticator, logged in (hasApiSession), a hosting cost and app data;
  // and one that only has an outstanding ott enrollment.
  user = await createUser();
  const patched = await admin({
    method: 'PATCH',
    path: `/identities/${user.id}`,
    body: { defaultHostingCost: 7, appData: { team: 'blue' } },
  });
  if (patched.status !== 200) throw new Error(`patch: ${patched.status} ${patched.text}`);
  n.enrolling = await create('/identities', {
    name: uniqueName('id'),
    type: 'User',
    isAdmin: false,
    enrollment: { ott: true },
  });
  n.service = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
  n.router = await create('/edge-routers', { name: uniqueName('er'), isTunnelerEnabled: true });
  n.dial = await create('/service-policies', {
    name: uniqueName('dial'),
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: [`@${user.id}`, `@${n.enrolling}`],
    serviceRoles: [`@${n.service}`],
  });
  n.erp = await create('/edge-router-policies', {
    name: uniqueName('erp'),
    semantic: 'AnyOf',
    identityRoles: [`@${user.id}`, `@${n.enrolling}`],
    edgeRouterRoles: [`@${n.router}`],
  });
  n.serp = await create('/service-edge-router-policies', {
    name: uniqueName('serp'),
    semantic: 'AnyOf',
    serviceRoles: [`@${n.service}`],
    edgeRouterRoles: [`@${n.router}`],
  });
}

/** Each item of a list is exactly the entity's own detail; the list holds exactly `ids`. */
async function expectOwnDetails(path: string, collection: string, ids: string[]) {
  const listed = await items(path);
  expect(listed.map((x) => x.id).sort(), path).toEqual([...ids].sort());
  for (const item of listed) expect(item, `${path} ${item.id}`).toEqual(await detail(`/${collection}/${item.id}`));
  return listed;
}

describe.each(running)('on $name', ({ name, start }) => {
  beforeAll(async () => {
    c = await start();
    await createNetwork();
  });
  afterAll(async () => {
    await c?.stop();
  });

  describe('association lists show identities as GET /identities/{id} does', () => {
    const identityLists = (): [string, string[]][] => [
      [`/services/${n.service}/identities`, []],
      [`/services/${n.service}/identities?policyType=dial`, []],
      // The tunneler-enabled router's own identity uses it too (its system edge-router policy).
      [`/edge-routers/${n.router}/identities`, [n.router!]],
      [`/service-policies/${n.dial}/identities`, []],
      [`/edge-router-policies/${n.erp}/identities`, []],
    ];

    it('every list: the whole detail, the logged-in identity’s API session and authenticator, the other’s enrollment', async () => {
      for (const [path, more] of identityLists()) {
        const listed = await expectOwnDetails(path, 'identities', [user.id, n.enrolling!, ...more]);
        const shown = listed.find((x) => x.id === user.id)!;
        expect(shown).toMatchObject({
          hasApiSession: true,
          authenticators: { updb: { id: user.authenticatorId, username: user.username } },
          authPolicy: { id: 'default', name: 'Default' },
          defaultHostingCost: 7,
          appData: { team: 'blue' },
        });
        const enrolling = listed.find((x) => x.id === n.enrolling)!;
        expect(enrolling).toMatchObject({ hasApiSession: false, authenticators: {} });
        expect(Object.keys(enrolling.enrollment as object)).toEqual(['ott']);
      }
    });

    it('paging, sorting and filtering stay the lists’ own', async () => {
      const path = `/services/${n.service}/identities`;
      const sorted = await items(`${path}?sort=${encodeURIComponent('id asc')}`);
      expect(sorted.map((x) => x.id)).toEqual([user.id, n.enrolling!].sort());
      const page = await admin({ path: `${path}?limit=1&offset=1&sort=${encodeURIComponent('id asc')}` });
      expect(page.json.meta.pagination).toMatchObject({ limit: 1, offset: 1, totalCount: 2 });
      expect(page.json.data).toEqual([await detail(`/identities/${sorted[1]!.id}`)]);
      const filtered = await items(`${path}?filter=${encodeURIComponent(`id = "${user.id}"`)}`);
      expect(filtered).toEqual([await detail(`/identities/${user.id}`)]);
    });

    it('an identity logging out shows so in the lists, as in its detail', async () => {
      const other = await createUser();
      await create('/service-policies', {
        name: uniqueName('dial'),
        type: 'Dial',
        semantic: 'AnyOf',
        identityRoles: [`@${other.id}`],
        serviceRoles: [`@${n.service}`],
      });
      const shown = async () => (await items(`/services/${n.service}/identities`)).find((x) => x.id === other.id);
      expect(await shown()).toMatchObject({ hasApiSession: true });
      const out = await c.call('management', { method: 'DELETE', path: '/current-api-session', token: other.token });
      expect(out.status).toBe(200);
      const after = await shown();
      expect(after).toEqual(await detail(`/identities/${other.id}`));
      expect(after).toMatchObject({ hasApiSession: false });
    });
  });

  describe('association lists show edge routers as GET /edge-routers/{id} does', () => {
    it('every list: the whole detail, the unverified router’s enrollment', async () => {
      for (const path of [
        `/identities/${user.id}/edge-routers`,
        `/services/${n.service}/edge-routers`,
        `/edge-router-policies/${n.erp}/edge-routers`,
        `/service-edge-router-policies/${n.serp}/edge-routers`,
      ]) {
        const [router] = await expectOwnDetails(path, 'edge-routers', [n.router!]);
        expect(router).toMatchObject({ isVerified: false, isTunnelerEnabled: true, isOnline: false });
        for (const key of ['enrollmentJwt', 'enrollmentToken', 'enrollmentCreatedAt', 'enrollmentExpiresAt'])
          expect(typeof router![key], `${path} ${key}`).toBe('string');
      }
    });
  });

  // Only the cluster runs its services apart, so only there can one be down.
  describe.runIf(name === 'the cluster')('an owner that is down', () => {
    function expectUnavailable(res: { status: number; json: { error?: { code?: string } } }) {
      expect(res.status).toBe(503);
      expect(['SERVICE_UNAVAILABLE', 'TIMEOUT']).toContain(res.json?.error?.code);
    }

    it('auth down: the identity lists are a 503; the others are still served', async () => {
      await e.cluster.stopService('auth');
      try {
        expectUnavailable(await admin({ path: `/services/${n.service}/identities` }));
        expectUnavailable(await admin({ path: `/edge-router-policies/${n.erp}/identities` }));
        expect((await admin({ path: `/services/${n.service}/edge-routers` })).status).toBe(200);
      } finally {
        await e.cluster.startService('auth');
      }
      expect((await admin({ path: `/services/${n.service}/identities` })).status).toBe(200);
    });

    it('inventory down: the edge-router lists are a 503', async () => {
      await e.cluster.stopService('inventory');
      try {
        expectUnavailable(await admin({ path: `/identities/${user.id}/edge-routers` }));
        expectUnavailable(await admin({ path: `/service-edge-router-policies/${n.serp}/edge-routers` }));
        expect((await admin({ path: `/services/${n.service}/identities` })).status).toBe(200);
      } finally {
        await e.cluster.startService('inventory');
      }
      expect((await admin({ path: `/identities/${user.id}/edge-routers` })).status).toBe(200);
    });
  });
});
