import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * What the Ziti Admin Console sends and reads, end to end: its identity form's `"externalId":""`
 * (an empty or blank external id is unset, as the reference stores it, so any number of identities
 * save with it), and the dashboard's `/summary` keys, the reference's entity counts
 * (`controller/db/stores.go GetEntityCounts`), moving as entities are created.
 */
let e: E2e;

beforeAll(async () => {
  e = await startE2e();
});
afterAll(async () => {
  await e?.stop();
});

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  expect(res.status, `${path} ${res.text}`).toBe(201);
  return res.json.data.id as string;
}

/** The console's identity form body. */
const consoleIdentity = (name: string) => ({
  name,
  type: 'User',
  isAdmin: false,
  roleAttributes: [],
  authPolicyId: 'default',
  externalId: '',
  enrollment: { ott: true },
  tags: {},
});

describe('externalId from the console form', () => {
  it('creates any number of identities with externalId "" (or blank), which read back as null', async () => {
    const ids: string[] = [];
    for (const externalId of ['', '', '   '])
      ids.push(await create('/identities', { ...consoleIdentity(uniqueName('zac')), externalId }));
    for (const id of ids) {
      const d = await admin({ path: `/identities/${id}` });
      expect(d.status).toBe(200);
      expect(d.json.data.externalId).toBeNull();
    }
    const filtered = await admin({ path: `/identities?filter=${encodeURIComponent('externalId = null')}&limit=500` });
    expect(filtered.status).toBe(200);
    const nullIds = filtered.json.data.map((i: { id: string }) => i.id);
    for (const id of ids) expect(nullIds).toContain(id);
  });

  it('PATCH and PUT carrying "" clear the externalId, and a real one stays unique', async () => {
    const external = uniqueName('ext');
    const a = await create('/identities', { ...consoleIdentity(uniqueName('zac')), externalId: external });
    const b = await create('/identities', consoleIdentity(uniqueName('zac')));
    expect((await admin({ path: `/identities/${a}` })).json.data.externalId).toBe(external);

    const patchA = await admin({ method: 'PATCH', path: `/identities/${a}`, body: { externalId: '' } });
    expect(patchA.status, patchA.text).toBe(200);
    const patchB = await admin({ method: 'PATCH', path: `/identities/${b}`, body: { externalId: '', tags: { x: 1 } } });
    expect(patchB.status, patchB.text).toBe(200);
    for (const id of [a, b]) expect((await admin({ path: `/identities/${id}` })).json.data.externalId).toBeNull();

    const current = (await admin({ path: `/identities/${b}` })).json.data;
    const put = await admin({
      method: 'PUT',
      path: `/identities/${b}`,
      body: { name: current.name, type: 'User', isAdmin: false, externalId: ' ' },
    });
    expect(put.status, put.text).toBe(200);
    expect((await admin({ path: `/identities/${b}` })).json.data.externalId).toBeNull();

    // A real value is kept as given, and two identities still cannot share it.
    expect((await admin({ method: 'PATCH', path: `/identities/${a}`, body: { externalId: external } })).status).toBe(
      200,
    );
    const dup = await admin({ method: 'PATCH', path: `/identities/${b}`, body: { externalId: external } });
    expect(dup.status).toBe(400);
    expect(dup.json.error.cause.field).toBe('externalId');
  });
});

/** Every key of the reference's `/summary` (1.1.9): its stores, child stores as `<type>.edge`, no transit routers. */
const referenceKeys = [
  'apiSessionCertificates',
  'apiSessions',
  'authPolicies',
  'authenticators',
  'cas',
  'configTypes',
  'configs',
  'controllers',
  'edgeRouterPolicies',
  'enrollments',
  'eventualEvents',
  'externalJwtSigners',
  'identities',
  'identityTypes',
  'mfas',
  'postureCheckTypes',
  'postureChecks',
  'revocations',
  'routers',
  'routers.edge',
  'serviceEdgeRouterPolicies',
  'servicePolicies',
  'services',
  'services.edge',
  'sessions',
  'terminators',
];

describe('/summary with the reference keys', () => {
  const summary = async () => {
    const res = await admin({ path: '/summary' });
    expect(res.status).toBe(200);
    return res.json.data as Record<string, number>;
  };

  it('answers every reference key (and ours) with counts that move as entities are created', async () => {
    // auth counts the live API sessions in Redis: the admin's own is there at once.
    const before = await summary();
    expect(before.apiSessions).toBeGreaterThanOrEqual(1);
    for (const key of [...referenceKeys, 'edgeRouters', 'transitRouters'])
      expect(Number.isInteger(before[key]), key).toBe(true);
    expect(before).toMatchObject({ identityTypes: 2, postureCheckTypes: 5, controllers: 1, revocations: 0 });
    expect(before['routers.edge']).toBe(before.edgeRouters);
    expect(before['services.edge']).toBe(before.services);

    // A user who may dial a service over an edge router, and everything the dashboard counts.
    const attr = uniqueName('c').replace(/[^a-z0-9]/gi, '');
    const user = await e.createUser({ roleAttributes: [attr] });
    const serviceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const routerId = await create('/edge-routers', { name: uniqueName('er'), roleAttributes: [attr] });
    await create('/service-policies', {
      name: uniqueName('sp'),
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: [`#${attr}`],
      serviceRoles: [`@${serviceId}`],
    });
    await create('/edge-router-policies', {
      name: uniqueName('erp'),
      semantic: 'AnyOf',
      identityRoles: [`#${attr}`],
      edgeRouterRoles: [`@${routerId}`],
    });
    await create('/service-edge-router-policies', {
      name: uniqueName('serp'),
      semantic: 'AnyOf',
      serviceRoles: [`@${serviceId}`],
      edgeRouterRoles: [`@${routerId}`],
    });
    await create('/posture-checks', { name: uniqueName('pc'), typeId: 'DOMAIN', domains: ['example.com'] });
    await create('/config-types', { name: uniqueName('ct') });
    // The edge session: retried while policy's view of the new policies converges.
    await waitFor(async () => {
      const res = await e.call('client', {
        method: 'POST',
        path: '/sessions',
        token: user.token,
        body: { serviceId, type: 'Dial' },
      });
      return res.status === 201 ? res : undefined;
    }, 'the dial session');

    // Counts come from each owner's own store: wait for them to settle, then compare.
    const after = await waitFor(async () => {
      const s = await summary();
      return s.apiSessions! > before.apiSessions! && s.sessions! > before.sessions! ? s : undefined;
    }, 'the API session and session counts');
    const moved = (key: string) => after[key]! - before[key]!;
    for (const key of [
      'services',
      'services.edge',
      'routers',
      'routers.edge',
      'servicePolicies',
      'edgeRouterPolicies',
      'serviceEdgeRouterPolicies',
      'postureChecks',
      'configTypes',
      'sessions',
    ])
      expect(moved(key), key).toBe(1);
    expect(moved('identities'), 'identities').toBe(1);
    expect(moved('authenticators'), 'authenticators').toBe(1);
    // The user's login; the admin's own session was counted before.
    expect(moved('apiSessions'), 'apiSessions').toBe(1);
    expect(after.identityTypes).toBe(2);
    expect(after.edgeRouters).toBe(after['routers.edge']);
  });
});

/**
 * Requests the console (ZAC 3.4.7, served on its own origin) sent while its pages were walked in a
 * browser, replayed as sent: the Angular pages' `accept`/`content-type`/`zt-session` headers and
 * their list queries, the jQuery pages' deletes (a trailing slash after the id), the identity
 * overrides dialog (array bodies, the delete carrying one), the simple-service wizard's five
 * creates, and the CORS headers an error answer needs so the console can read its `error`.
 */
describe('what the console sent while its pages were walked', () => {
  const origin = 'http://127.0.0.1:4300';
  const consoleHeaders = { origin, accept: 'application/json', 'content-type': 'application/json' };
  const send = (req: Parameters<E2e['call']>[1]) =>
    admin({ ...req, headers: { ...consoleHeaders, ...(req.headers ?? {}) } });

  it('answers the list queries of the pages and forms', async () => {
    const q = (s: string) => s.replace(/ /g, '%20').replace(/"/g, '%22');
    for (const path of [
      q('/identities?filter=(name contains "")&limit=50&offset=0&sort=name ASC'),
      q('/identity-role-attributes?filter=(id contains "")&limit=100&offset=0&sort=id ASC'),
      q('/summary?filter=(name contains "")&limit=5000&offset=0&sort=name ASC'),
      '/services?limit=-1&offset=0&sort=name%20asc',
      '/config-types?limit=100&offset=0&sort=name%20asc',
    ]) {
      const res = await send({ path, body: {} });
      expect(res.status, `${path} ${res.text}`).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
    }
    const all = await send({ path: '/services?limit=-1&offset=0&sort=name%20asc' });
    expect(all.json.meta.pagination.limit).toBe(2 ** 63); // math.MaxInt64, as the reference
  });

  it('deletes what the jQuery pages delete, with the trailing slash after the id', async () => {
    for (const [type, body] of [
      ['config-types', { name: uniqueName('ct') }],
      ['posture-checks', { name: uniqueName('pc'), typeId: 'MFA', roleAttributes: ['a'], tags: {}, timeoutSeconds: 0 }],
      [
        'external-jwt-signers',
        {
          name: uniqueName('jwt'),
          audience: 'aud',
          issuer: `https://issuer.example/${uniqueName('iss')}`,
          claimsProperty: 'sub',
          enabled: true,
          jwksEndpoint: 'https://issuer.example/jwks',
          tags: {},
        },
      ],
    ] as const) {
      const id = await create(`/${type}`, body);
      const del = await send({ method: 'DELETE', path: `/${type}/${id}/` });
      expect(del.status, `${type} ${del.text}`).toBe(200);
      expect((await admin({ path: `/${type}/${id}` })).status).toBe(404);
    }
  });

  it('adds, lists and removes an identity service-config override as the overrides dialog does', async () => {
    const ct = (await admin({ path: `/config-types?filter=${encodeURIComponent('name="intercept.v1"')}` })).json.data[0]
      .id;
    const configId = await create('/configs', {
      name: uniqueName('cfg'),
      configTypeId: ct,
      data: { protocols: ['tcp'], addresses: ['x.ziti'], portRanges: [{ low: 1, high: 1 }] },
    });
    const serviceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true, configs: [] });
    const identityId = await create('/identities', consoleIdentity(uniqueName('zac')));
    const path = `/identities/${identityId}/service-configs`;
    const add = await send({ method: 'POST', path, body: [{ serviceId, configId }] });
    expect(add.status, add.text).toBe(200);
    const listed = await send({ path });
    expect(listed.json.data).toMatchObject([{ serviceId, configId }]);
    const del = await send({ method: 'DELETE', path, body: [{ serviceId, configId }] });
    expect(del.status, del.text).toBe(200);
    expect((await send({ path })).json.data).toEqual([]);
  });

  it('creates the simple-service wizard entities from its bodies', async () => {
    const typeId = async (name: string) =>
      (await admin({ path: `/config-types?filter=${encodeURIComponent(`name="${name}"`)}` })).json.data[0].id as string;
    const name = uniqueName('simple');
    const intercept = await create('/configs', {
      name: `${name}-intercept-config`,
      configTypeId: await typeId('intercept.v1'),
      data: { portRanges: [{ low: 80, high: 80 }], addresses: ['simple.ziti'], protocols: ['tcp', 'udp'] },
    });
    const host = await create('/configs', {
      name: `${name}-host-config`,
      configTypeId: await typeId('host.v1'),
      data: { address: 'localhost', port: 8080, forwardProtocol: true, allowedProtocols: ['tcp'], protocol: 'tcp' },
    });
    const serviceId = await create('/services', {
      name,
      encryptionRequired: true,
      terminatorStrategy: '',
      roleAttributes: [],
      tags: {},
      configs: [intercept, host],
    });
    for (const type of ['Dial', 'Bind'])
      await create('/service-policies', {
        name: `${name}-${type.toLowerCase()}-policy`,
        type,
        semantic: 'AnyOf',
        serviceRoles: [`@${serviceId}`],
        identityRoles: [`#zac${type.toLowerCase()}`],
      });
    const service = (await admin({ path: `/services/${serviceId}` })).json.data;
    expect(service.configs.sort()).toEqual([intercept, host].sort());
    expect(service.terminatorStrategy).toBe('smartrouting');
  });

  it('carries the CORS headers on an error answer, so the console can read its error', async () => {
    const res = await send({
      method: 'POST',
      path: '/service-policies',
      body: { name: '', type: 'Dial', semantic: 'AnyOf' },
    });
    expect(res.status).toBe(400);
    expect(res.headers['access-control-allow-origin']).toBe(origin);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.json.error.cause.field).toBe('name');
  });
});
