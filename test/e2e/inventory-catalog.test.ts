import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * inventory end to end: config types, configs, services (both APIs), identity service configs
 * and terminators, through the gateway on the real cluster, every response checked against the
 * official spec; policy's service read model follows the events.
 */
let e: E2e;
let user: Awaited<ReturnType<E2e['createUser']>>;

beforeAll(async () => {
  e = await startE2e();
  user = await e.createUser();
});
afterAll(async () => {
  await e?.stop();
});

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });
const builtins = {
  'f2dd2df0-9c04-4b84-a91e-71437ac229f1': 'ziti-tunneler-client.v1',
  'cea49285-6c07-42cf-9f52-09a9b115c783': 'ziti-tunneler-server.v1',
  g7cIWbcGg: 'intercept.v1',
  NH5p4FpGR: 'host.v1',
  'host.v2': 'host.v2',
};

async function create(path: string, body: unknown): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  expect(res.status, `${path} ${res.text}`).toBe(201);
  expect(res.json.data._links.self.href).toBe(`.${path}/${res.json.data.id}`);
  return res.json.data.id as string;
}

const interceptData = { protocols: ['tcp'], addresses: ['app.ziti'], portRanges: [{ low: 443, high: 443 }] };

describe('config types', () => {
  it('the built-in types exist with their fixed ids', async () => {
    const res = await admin({ path: '/config-types?limit=100' });
    expect(res.status).toBe(200);
    const byId = Object.fromEntries(res.json.data.map((t: { id: string; name: string }) => [t.id, t.name]));
    for (const [id, name] of Object.entries(builtins)) expect(byId[id]).toBe(name);
    const one = await admin({ path: '/config-types/g7cIWbcGg' });
    expect(one.json.data.schema.required).toEqual(['protocols', 'addresses', 'portRanges']);
    expect(res.json.meta.filterableFields).toEqual(expect.arrayContaining(['id', 'name', 'schema']));
  });

  it('create, detail, replace, patch, list by name, delete', async () => {
    const name = uniqueName('ct');
    const schema = { type: 'object', properties: { port: { type: 'integer' } }, required: ['port'] };
    const id = await create('/config-types', { name, schema, tags: { team: 'net' } });
    const detail = await admin({ path: `/config-types/${id}` });
    expect(detail.json.data).toMatchObject({
      id,
      name,
      schema,
      tags: { team: 'net' },
      _links: { self: { href: `./config-types/${id}` } },
    });
    expect((await admin({ method: 'PUT', path: `/config-types/${id}`, body: { name: `${name}-2` } })).status).toBe(200);
    expect((await admin({ path: `/config-types/${id}` })).json.data).toMatchObject({
      name: `${name}-2`,
      schema: {},
      tags: {},
    });
    expect((await admin({ method: 'PATCH', path: `/config-types/${id}`, body: { schema } })).status).toBe(200);
    const listed = await admin({ path: `/config-types?filter=${encodeURIComponent(`name="${name}-2"`)}` });
    expect(listed.json.data.map((t: { id: string }) => t.id)).toEqual([id]);
    expect(listed.json.data[0].schema).toEqual(schema);
    expect((await admin({ method: 'DELETE', path: `/config-types/${id}` })).status).toBe(200);
    const gone = await admin({ path: `/config-types/${id}` });
    expect(gone.status).toBe(404);
    expect(gone.json.error).toMatchObject({
      code: 'NOT_FOUND',
      cause: { message: `configType with id ${id} not found` },
    });
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{}, 'name'],
      [{ name: 'all' }, 'name'],
      [{ name: uniqueName('ct'), schema: { type: 'object', properties: { x: { type: 'nope' } } } }, 'schema'],
      [{ name: uniqueName('ct'), schema: { type: 'string' } }, 'schema'],
      [{ name: 'intercept.v1' }, 'name'],
    ];
    for (const [body, field] of cases) {
      const res = await admin({ method: 'POST', path: '/config-types', body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe('COULD_NOT_VALIDATE');
      expect(res.json.error.cause.field).toBe(field);
    }
  });
});

describe('configs', () => {
  it('validates data against the type’s schema, with the schema path as the field', async () => {
    const bad = await admin({
      method: 'POST',
      path: '/configs',
      body: {
        name: uniqueName('c'),
        configTypeId: 'g7cIWbcGg',
        data: { ...interceptData, portRanges: [{ low: 1, high: 70000 }] },
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'portRanges.0.high', value: '70000' },
    });
    const missing = await admin({
      method: 'POST',
      path: '/configs',
      body: { name: uniqueName('c'), configTypeId: 'f2dd2df0-9c04-4b84-a91e-71437ac229f1', data: { hostname: 'x' } },
    });
    expect(missing.json.error.cause).toMatchObject({
      field: '(root)',
      reason: '(root) is invalid: (root): port is required',
    });
    const noType = await admin({
      method: 'POST',
      path: '/configs',
      body: { name: uniqueName('c'), configTypeId: 'nope', data: {} },
    });
    expect(noType.json.error.cause.field).toBe('type');
    const noData = await admin({
      method: 'POST',
      path: '/configs',
      body: { name: uniqueName('c'), configTypeId: 'g7cIWbcGg' },
    });
    expect(noData.json.error.cause.field).toBe('data');
  });

  it('an empty name is present for the spec and refused by the model, as the reference does; a name is kept as given', async () => {
    const emptyName = { name: '', configTypeId: 'g7cIWbcGg', data: interceptData };
    const refused = await admin({ method: 'POST', path: '/configs', body: emptyName });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.error).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'name', reason: 'name is required', value: '' },
    });
    // The reference trims nothing: surrounding spaces are part of the name.
    const spaced = `  ${uniqueName('cfg')} `;
    const id = await create('/configs', { ...emptyName, name: spaced });
    expect((await admin({ path: `/configs/${id}` })).json.data.name).toBe(spaced);
    const patched = await admin({ method: 'PATCH', path: `/configs/${id}`, body: { name: '' } });
    expect(patched.status, patched.text).toBe(400);
    expect(patched.json.error.cause).toMatchObject({ field: 'name', reason: 'name is required', value: '' });
    expect((await admin({ path: `/configs/${id}` })).json.data.name).toBe(spaced);
    for (const [path, body] of [
      ['/services', { name: '', encryptionRequired: true }],
      ['/identities', { name: '', type: 'User', isAdmin: false }],
      ['/service-policies', { name: '', type: 'Dial', semantic: 'AnyOf' }],
    ] as const) {
      const res = await admin({ method: 'POST', path, body });
      expect(res.status, `${path} ${res.text}`).toBe(400);
      expect(res.json.error.cause, path).toMatchObject({ field: 'name', reason: 'name is required', value: '' });
    }
    // A missing name is the spec's refusal, before any model sees it.
    const missing = await admin({
      method: 'POST',
      path: '/configs',
      body: { configTypeId: 'g7cIWbcGg', data: interceptData },
    });
    expect(missing.json.error.cause).toMatchObject({ field: 'name', reason: 'name in body is required' });
  });

  it('create, detail with its type, replace, patch, filter by type and data, list per type, delete', async () => {
    const name = uniqueName('c');
    const id = await create('/configs', { name, configTypeId: 'g7cIWbcGg', data: interceptData });
    const detail = await admin({ path: `/configs/${id}` });
    expect(detail.json.data).toMatchObject({
      name,
      configTypeId: 'g7cIWbcGg',
      configType: {
        id: 'g7cIWbcGg',
        name: 'intercept.v1',
        entity: 'config-types',
        _links: { self: { href: './config-types/g7cIWbcGg' } },
      },
      data: interceptData,
      tags: {},
    });
    const replaced = { ...interceptData, addresses: ['db.ziti'] };
    expect((await admin({ method: 'PUT', path: `/configs/${id}`, body: { name, data: replaced } })).status).toBe(200);
    const badPatch = await admin({ method: 'PATCH', path: `/configs/${id}`, body: { data: { protocols: ['icmp'] } } });
    expect(badPatch.status).toBe(400);
    expect((await admin({ method: 'PATCH', path: `/configs/${id}`, body: { tags: { env: 'prod' } } })).status).toBe(
      200,
    );
    expect((await admin({ path: `/configs/${id}` })).json.data).toMatchObject({
      data: replaced,
      tags: { env: 'prod' },
    });
    const byData = await admin({
      path: `/configs?filter=${encodeURIComponent(`type="g7cIWbcGg" and name="${name}" and tags.env="prod"`)}`,
    });
    expect(byData.json.data.map((c: { id: string }) => c.id)).toEqual([id]);
    const perType = await admin({ path: '/config-types/g7cIWbcGg/configs' });
    expect(perType.json.data.map((c: { id: string }) => c.id)).toContain(id);
    expect((await admin({ path: '/config-types/nope/configs' })).status).toBe(404);
    const inUse = await admin({ method: 'DELETE', path: '/config-types/g7cIWbcGg' });
    expect(inUse.status).toBe(409);
    expect(inUse.json.error.code).toBe('CAN_NOT_DELETE_REFERENCED_ENTITY');
    expect((await admin({ method: 'DELETE', path: `/configs/${id}` })).status).toBe(200);
    expect((await admin({ path: `/configs/${id}` })).status).toBe(404);
  });
});

describe('services', () => {
  let serviceId: string;
  let interceptId: string;
  let hostId: string;
  const name = uniqueName('svc');
  const attr = uniqueName('attr').replace(/[^a-z]/g, '');

  it('create with every field; defaults; detail; configs and services sub-lists', async () => {
    interceptId = await create('/configs', { name: uniqueName('c'), configTypeId: 'g7cIWbcGg', data: interceptData });
    hostId = await create('/configs', {
      name: uniqueName('c'),
      configTypeId: 'NH5p4FpGR',
      data: { protocol: 'tcp', address: 'localhost', port: 8443 },
    });
    serviceId = await create('/services', {
      name,
      encryptionRequired: false,
      configs: [interceptId, hostId],
      roleAttributes: [`${attr}b`, `${attr}a`],
      maxIdleTimeMillis: 30000,
      tags: { owner: 'qa' },
    });
    const detail = await admin({ path: `/services/${serviceId}` });
    expect(detail.json.data).toMatchObject({
      name,
      encryptionRequired: false,
      configs: [interceptId, hostId],
      config: {},
      roleAttributes: [`${attr}a`, `${attr}b`],
      terminatorStrategy: 'smartrouting',
      maxIdleTimeMillis: 30000,
      tags: { owner: 'qa' },
      // An administrator no policy grants the service: the reference's one passing `Invalid` entry.
      postureQueries: [
        {
          policyId: 'dummy invalid policy: no posture checks defined',
          policyType: 'Invalid',
          isPassing: true,
          postureQueries: [],
        },
      ],
    });
    expect(Object.keys(detail.json.data._links).sort()).toEqual([
      'configs',
      'self',
      'service-edge-router-policies',
      'service-policies',
      'terminators',
    ]);
    const configs = await admin({ path: `/services/${serviceId}/configs` });
    expect(configs.json.data.map((c: { id: string }) => c.id).sort()).toEqual([interceptId, hostId].sort());
    const services = await admin({ path: `/configs/${hostId}/services` });
    expect(services.json.data.map((s: { id: string }) => s.id)).toEqual([serviceId]);
    expect((await admin({ path: '/services/nope/configs' })).status).toBe(404);
  });

  it('refuses two configs of one type, unknown configs and a bad strategy', async () => {
    const other = await create('/configs', { name: uniqueName('c'), configTypeId: 'g7cIWbcGg', data: interceptData });
    const dup = await admin({
      method: 'POST',
      path: '/services',
      body: { name: uniqueName('s'), encryptionRequired: true, configs: [interceptId, other] },
    });
    expect(dup.status).toBe(400);
    expect(dup.json.error.cause.field).toBe('configs');
    const unknown = await admin({
      method: 'POST',
      path: '/services',
      body: { name: uniqueName('s'), encryptionRequired: true, configs: ['nope'] },
    });
    expect(unknown.status).toBe(404);
    const strategy = await admin({
      method: 'POST',
      path: '/services',
      body: { name: uniqueName('s'), encryptionRequired: true, terminatorStrategy: 'fastest' },
    });
    expect(strategy.json.error.cause.field).toBe('terminatorStrategy');
    const noEncryption = await admin({ method: 'POST', path: '/services', body: { name: uniqueName('s') } });
    expect(noEncryption.json.error.cause.field).toBe('encryptionRequired');
  });

  it('lists with roleFilter/roleSemantic and with the configs of requested types', async () => {
    const other = await create('/services', {
      name: uniqueName('svc'),
      encryptionRequired: true,
      roleAttributes: [`${attr}a`],
    });
    const ids = async (q: string) =>
      (await admin({ path: `/services?${q}&limit=100` })).json.data.map((s: { id: string }) => s.id).sort();
    expect(
      await ids(`roleFilter=${encodeURIComponent(`#${attr}a`)}&roleFilter=${encodeURIComponent(`#${attr}b`)}`),
    ).toEqual([serviceId]);
    expect(
      await ids(
        `roleFilter=${encodeURIComponent(`#${attr}a`)}&roleFilter=${encodeURIComponent(`#${attr}b`)}&roleSemantic=AnyOf`,
      ),
    ).toEqual([serviceId, other].sort());
    expect(await ids(`roleFilter=${encodeURIComponent(`@${other}`)}&filter=${encodeURIComponent('true')}`)).toEqual([
      other,
    ]);
    const bad = await admin({ path: `/services?roleFilter=${encodeURIComponent(`#${attr}a`)}&roleSemantic=Some` });
    expect(bad.status).toBe(400);
    const withConfig = await admin({
      path: `/services?filter=${encodeURIComponent(`id="${serviceId}"`)}&configTypes=intercept.v1`,
    });
    expect(withConfig.json.data[0].config).toEqual({ 'intercept.v1': interceptData });
    const all = await admin({ path: `/services/${serviceId}?configTypes=all` });
    expect(all.status).toBe(200);
    const byConfig = await admin({ path: `/services?filter=${encodeURIComponent(`anyOf(configs)="${hostId}"`)}` });
    expect(byConfig.json.data.map((s: { id: string }) => s.id)).toEqual([serviceId]);
  });

  it('policy keeps a read model of services: /service-role-attributes follows changes', async () => {
    const attrs = async () =>
      (await admin({ path: `/service-role-attributes?filter=${encodeURIComponent(`id contains "${attr}"`)}` })).json
        .data as string[];
    await waitFor(async () => (await attrs()).includes(`${attr}b`), 'service attributes in policy');
    expect(
      (
        await admin({
          method: 'PATCH',
          path: `/services/${serviceId}`,
          body: { roleAttributes: [`${attr}c`], encryptionRequired: true },
        })
      ).status,
    ).toBe(200);
    await waitFor(
      async () => (await attrs()).includes(`${attr}c`) && !(await attrs()).includes(`${attr}b`),
      'the new attributes in policy',
    );
    const detail = await admin({ path: `/services/${serviceId}` });
    expect(detail.json.data).toMatchObject({
      // As the reference: a PATCH does not change encryptionRequired (a PUT does).
      encryptionRequired: false,
      roleAttributes: [`${attr}c`],
      configs: [interceptId, hostId],
    });
  });

  it('replace sets encryptionRequired as given (as the reference does) and resets what is absent', async () => {
    expect(
      (await admin({ method: 'PUT', path: `/services/${serviceId}`, body: { name, encryptionRequired: true } })).status,
    ).toBe(200);
    expect((await admin({ path: `/services/${serviceId}` })).json.data).toMatchObject({
      encryptionRequired: true,
      configs: [],
      roleAttributes: null, // none, as the reference shows an empty list
      maxIdleTimeMillis: 0,
      tags: {},
      terminatorStrategy: 'smartrouting',
    });
  });

  it('the client API’s replace, patch and delete: admins only', async () => {
    const id = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const clientAdmin = await e.login(e.cluster.adminUsername, e.cluster.adminPassword, 'client');
    for (const token of [undefined, user.token]) {
      const res = await e.call('client', {
        method: 'PATCH',
        path: `/services/${id}`,
        body: { tags: { x: 'y' } },
        ...(token ? { token } : {}),
      });
      expect(res.status).toBe(401);
      expect(res.json.error.code).toBe('UNAUTHORIZED');
      expect(
        (await e.call('client', { method: 'DELETE', path: `/services/${id}`, ...(token ? { token } : {}) })).status,
      ).toBe(401);
    }
    expect(
      (
        await e.call('client', {
          method: 'PATCH',
          path: `/services/${id}`,
          body: { tags: { x: 'y' } },
          token: clientAdmin,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await e.call('client', {
          method: 'PUT',
          path: `/services/${id}`,
          body: { name: `${id}-renamed`, maxIdleTimeMillis: 5 },
          token: clientAdmin,
        })
      ).status,
    ).toBe(200);
    // Another session (the management one) sees the client session's write within a bounded delay.
    const renamed = await waitFor(async () => {
      const data = (await admin({ path: `/services/${id}` })).json.data;
      return data.name === `${id}-renamed` ? data : undefined;
    }, 'the renamed service');
    expect(renamed).toMatchObject({ name: `${id}-renamed`, maxIdleTimeMillis: 5, tags: {} });
    expect((await e.call('client', { method: 'DELETE', path: `/services/${id}`, token: clientAdmin })).status).toBe(
      200,
    );
    await waitFor(async () => (await admin({ path: `/services/${id}` })).status === 404, 'the deleted service gone');
  });
});

describe('identity service configs and terminators', () => {
  it('associate, list, replace by type, disassociate some or all; unknown identity 404; gone with the identity', async () => {
    const identityId = await e.createIdentity();
    const svc = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const c1 = await create('/configs', { name: uniqueName('c'), configTypeId: 'g7cIWbcGg', data: interceptData });
    const c2 = await create('/configs', {
      name: uniqueName('c'),
      configTypeId: 'g7cIWbcGg',
      data: { ...interceptData, addresses: ['b.ziti'] },
    });
    const c3 = await create('/configs', {
      name: uniqueName('c'),
      configTypeId: 'NH5p4FpGR',
      data: { protocol: 'udp', address: 'dns', port: 53 },
    });
    const path = `/identities/${identityId}/service-configs`;
    expect(
      (
        await admin({
          method: 'POST',
          path,
          body: [
            { serviceId: svc, configId: c1 },
            { serviceId: svc, configId: c3 },
          ],
        })
      ).status,
    ).toBe(200);
    expect((await admin({ method: 'POST', path, body: [{ serviceId: svc, configId: c2 }] })).status).toBe(200);
    const listed = await admin({ path });
    expect(listed.status).toBe(200);
    const pairs = listed.json.data.map((d: { configId: string }) => d.configId).sort();
    expect(pairs).toEqual([c2, c3].sort());
    const c2Row = listed.json.data.find((d: { configId: string }) => d.configId === c2);
    expect(c2Row).toMatchObject({
      serviceId: svc,
      service: { id: svc, entity: 'services' },
      config: { id: c2, entity: 'configs' },
    });

    const unknown = await admin({ method: 'POST', path, body: [{ serviceId: 'nope', configId: c1 }] });
    expect(unknown.status).toBe(404);
    const missingField = await admin({ method: 'POST', path, body: [{ serviceId: svc }] });
    expect(missingField.status).toBe(400);
    expect((await admin({ path: '/identities/nope/service-configs' })).status).toBe(404);
    const inUse = await admin({ method: 'DELETE', path: `/configs/${c3}` });
    expect(inUse.status).toBe(409);

    expect((await admin({ method: 'DELETE', path, body: [{ serviceId: svc, configId: c3 }] })).status).toBe(200);
    expect((await admin({ path })).json.data.map((d: { configId: string }) => d.configId)).toEqual([c2]);
    expect((await admin({ method: 'DELETE', path })).status).toBe(200);
    expect((await admin({ path })).json.data).toEqual([]);

    // Overrides leave with their identity.
    expect((await admin({ method: 'POST', path, body: [{ serviceId: svc, configId: c1 }] })).status).toBe(200);
    expect((await admin({ method: 'DELETE', path: `/identities/${identityId}` })).status).toBe(200);
    await waitFor(
      async () => (await admin({ method: 'DELETE', path: `/configs/${c1}` })).status === 200,
      'the config to be free once the identity is gone',
    );
  });

  it('terminators: create, detail, list per service and by router name, replace, patch, delete', async () => {
    const svc = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const routerName = uniqueName('tr');
    const router = await create('/transit-routers', { name: routerName });
    const id = await create('/terminators', {
      service: svc,
      router,
      binding: 'transport',
      address: 'tcp:10.0.0.1:443',
      cost: 10,
      precedence: 'required',
      identity: 'host-1',
      identitySecret: Buffer.from('secret').toString('base64'),
    });
    const detail = await admin({ path: `/terminators/${id}` });
    expect(detail.json.data).toMatchObject({
      serviceId: svc,
      service: { id: svc, entity: 'services' },
      routerId: router,
      router: {
        id: router,
        name: routerName,
        entity: 'transit-routers',
        _links: { self: { href: `./transit-routers/${router}` } },
      },
      binding: 'transport',
      address: 'tcp:10.0.0.1:443',
      identity: 'host-1',
      cost: 10,
      // fabric's dynamic cost, not the static one: no dial touched it.
      dynamicCost: 0,
      precedence: 'required',
    });
    expect(JSON.stringify(detail.json)).not.toContain('secret');
    expect((await admin({ path: `/services/${svc}/terminators` })).json.data.map((t: { id: string }) => t.id)).toEqual([
      id,
    ]);
    const byRouter = await admin({ path: `/terminators?filter=${encodeURIComponent(`router.name="${routerName}"`)}` });
    expect(byRouter.json.data.map((t: { id: string }) => t.id)).toEqual([id]);
    const bad = await admin({
      method: 'POST',
      path: '/terminators',
      body: { service: svc, router: 'nope', binding: 'b', address: 'a' },
    });
    expect(bad.status).toBe(404);
    const badPrecedence = await admin({
      method: 'PATCH',
      path: `/terminators/${id}`,
      body: { precedence: 'sometimes' },
    });
    expect(badPrecedence.status).toBe(400);
    expect(
      (
        await admin({
          method: 'PUT',
          path: `/terminators/${id}`,
          body: { service: svc, router, binding: 'edge', address: 'hosted' },
        })
      ).status,
    ).toBe(200);
    expect((await admin({ method: 'PATCH', path: `/terminators/${id}`, body: { cost: 3 } })).status).toBe(200);
    expect((await admin({ path: `/terminators/${id}` })).json.data).toMatchObject({
      binding: 'edge',
      address: 'hosted',
      cost: 3,
      precedence: 'default',
      identity: 'host-1',
    });
    expect((await admin({ method: 'DELETE', path: `/terminators/${id}` })).status).toBe(200);
    expect((await admin({ path: `/terminators/${id}` })).status).toBe(404);
  });
});

describe('who may call', () => {
  const cases: { method: string; path: string; body?: unknown }[] = [
    { method: 'GET', path: '/config-types' },
    { method: 'POST', path: '/config-types', body: { name: 'x' } },
    { method: 'GET', path: '/configs' },
    { method: 'POST', path: '/configs', body: { name: 'x', configTypeId: 'g7cIWbcGg', data: interceptData } },
    { method: 'GET', path: '/services' },
    { method: 'POST', path: '/services', body: { name: 'x', encryptionRequired: true } },
    { method: 'DELETE', path: '/services/x' },
    { method: 'GET', path: '/terminators' },
    { method: 'GET', path: '/identities/x/service-configs' },
    { method: 'GET', path: '/service-role-attributes' },
  ];
  it('anonymous and non-admin callers get 401 UNAUTHORIZED', async () => {
    for (const c of cases) {
      for (const token of [undefined, user.token]) {
        const res = await e.call('management', {
          method: c.method,
          path: c.path,
          ...(c.body ? { body: c.body } : {}),
          ...(token ? { token } : {}),
        });
        expect(res.status, `${c.method} ${c.path} ${token ? 'user' : 'anonymous'}`).toBe(401);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
      }
    }
  });
});
