import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Every identity's view of its services (ZITI-FACTS §6.3, §10.2, §10.3) end to end: a non-admin
 * identity lists exactly the services its Dial/Bind policies grant (AnyOf, AllOf, @id, #all), with
 * permissions, config data of the requested types (its own overrides first) and posture queries;
 * losing an attribute, a policy or the service removes the access; service-updates moves with
 * every change that alters the list; administrators see every service with their own permissions.
 */
let e: E2e;
let user: Awaited<ReturnType<E2e['createUser']>>;
const n: Record<string, string> = {};
const attr = { a: uniqueName('a'), b: uniqueName('b'), sx: uniqueName('sx'), sy: uniqueName('sy') };
const intercept = (address: string) => ({
  protocols: ['tcp'],
  addresses: [address],
  portRanges: [{ low: 443, high: 443 }],
});

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });
const client = (req: Parameters<E2e['call']>[1]) => e.call('client', { ...req, token: user.token });

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.json.data.id as string;
}

interface ServiceItem {
  id: string;
  name: string;
  permissions: string[];
  config: Record<string, Record<string, unknown>>;
  postureQueries: { policyId: string; policyType: string; isPassing: boolean }[];
}

async function clientServices(query = ''): Promise<ServiceItem[]> {
  const res = await client({ path: `/services?limit=500${query}` });
  expect(res.status, res.text).toBe(200);
  return res.json.data as ServiceItem[];
}
const visible = async (query = '') => (await clientServices(query)).map((s) => s.id).sort();
/** Another session's view converges within a bounded delay (no read-your-writes for it). */
const eventually = (want: string[], query = '') =>
  waitFor(async () => JSON.stringify(await visible(query)) === JSON.stringify([...want].sort()), `services ${want}`);

beforeAll(async () => {
  e = await startE2e();
  user = await e.createUser({ roleAttributes: [attr.a, attr.b] });
  n.c1 = await create('/configs', { name: uniqueName('c'), configTypeId: 'g7cIWbcGg', data: intercept('one.ziti') });
  n.c2 = await create('/configs', {
    name: uniqueName('c'),
    configTypeId: 'NH5p4FpGR',
    data: { protocol: 'tcp', address: 'localhost', port: 8080 },
  });
  n.override = await create('/configs', {
    name: uniqueName('c'),
    configTypeId: 'g7cIWbcGg',
    data: intercept('mine.ziti'),
  });
  const service = (roleAttributes: string[], configs: string[] = []) =>
    create('/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes, configs });
  n.s1 = await service([attr.sx], [n.c1, n.c2]);
  n.s2 = await service([attr.sx, attr.sy]);
  n.s3 = await service([]);
  n.s4 = await service([attr.sy]);
  // Dial s1 and s2 (AnyOf #sx) for #a; bind s2 (AllOf sx+sy) for #a AND #b; dial s3 by @id for @user.
  n.dial = await create('/service-policies', {
    name: uniqueName('dial'),
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: [`#${attr.a}`],
    serviceRoles: [`#${attr.sx}`],
  });
  n.bind = await create('/service-policies', {
    name: uniqueName('bind'),
    type: 'Bind',
    semantic: 'AllOf',
    identityRoles: [`#${attr.a}`, `#${attr.b}`],
    serviceRoles: [`#${attr.sx}`, `#${attr.sy}`],
  });
  n.byId = await create('/service-policies', {
    name: uniqueName('byid'),
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: [`@${user.id}`],
    serviceRoles: [`@${n.s3}`],
  });
});
afterAll(async () => {
  await e?.stop();
});

describe('client GET /services', () => {
  it('lists exactly the granted services with Bind-first permissions and passing synthetic posture queries', async () => {
    await eventually([n.s1!, n.s2!, n.s3!]);
    const items = await clientServices();
    const byId = new Map(items.map((s) => [s.id, s]));
    expect(byId.get(n.s1!)!.permissions).toEqual(['Dial']);
    expect(byId.get(n.s2!)!.permissions).toEqual(['Bind', 'Dial']);
    expect(byId.get(n.s3!)!.permissions).toEqual(['Dial']);
    expect(byId.get(n.s2!)!.postureQueries).toEqual([
      {
        policyId: 'dummy bind policy: no posture checks defined',
        policyType: 'Bind',
        isPassing: true,
        postureQueries: [],
      },
      {
        policyId: 'dummy dial policy: no posture checks defined',
        policyType: 'Dial',
        isPassing: true,
        postureQueries: [],
      },
    ]);
    // No config types requested: no config data.
    expect(byId.get(n.s1!)!.config).toEqual({});
  });

  it('filters, pages and counts over the granted services only', async () => {
    const res = await client({
      path: `/services?limit=1&sort=name&filter=${encodeURIComponent(`id in ["${n.s1}","${n.s4}"]`)}`,
    });
    expect(res.status).toBe(200);
    expect(res.json.meta.pagination).toMatchObject({ limit: 1, offset: 0, totalCount: 1 });
    expect(res.json.data.map((s: ServiceItem) => s.id)).toEqual([n.s1]);
  });

  it('resolves configTypes by name, id or all, and the identity override replaces the service config of its type', async () => {
    let s1 = (await clientServices('&configTypes=intercept.v1')).find((s) => s.id === n.s1)!;
    expect(s1.config).toEqual({ 'intercept.v1': intercept('one.ziti') });
    s1 = (await clientServices('&configTypes=intercept.v1&configTypes=NH5p4FpGR')).find((s) => s.id === n.s1)!;
    expect(Object.keys(s1.config).sort()).toEqual(['host.v1', 'intercept.v1']);
    s1 = (await clientServices('&configTypes=all')).find((s) => s.id === n.s1)!;
    expect(Object.keys(s1.config).sort()).toEqual(['host.v1', 'intercept.v1']);
    expect((await clientServices('&configTypes=nope')).find((s) => s.id === n.s1)!.config).toEqual({});
    // Without the parameter, the config types the API session asked for at login apply.
    const login = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: user.username, password: user.password, configTypes: ['intercept.v1'] },
    });
    expect(login.status).toBe(200);
    const withTypes = login.json.data.token as string;
    // On the very first request: the caller carries them (a login announces nothing, ADR 0017).
    const detailed = await e.call('client', { path: `/services/${n.s1}`, token: withTypes });
    expect(detailed.json.data.config).toEqual({ 'intercept.v1': intercept('one.ziti') });
    const listed = await e.call('client', { path: '/services?limit=500', token: withTypes });
    expect(listed.json.data.find((x: { id: string }) => x.id === n.s1).config).toEqual({
      'intercept.v1': intercept('one.ziti'),
    });

    const before = (await client({ path: '/current-api-session/service-updates' })).json.data.lastChangeAt;
    const res = await admin({
      method: 'POST',
      path: `/identities/${user.id}/service-configs`,
      body: [{ serviceId: n.s1, configId: n.override }],
    });
    expect(res.status, res.text).toBe(200);
    await waitFor(async () => {
      const s = (await clientServices('&configTypes=intercept.v1')).find((x) => x.id === n.s1)!;
      return isDeepStrictEqual(s.config, { 'intercept.v1': intercept('mine.ziti') });
    }, 'the override');
    const after = (await client({ path: '/current-api-session/service-updates' })).json.data.lastChangeAt;
    expect(new Date(after).getTime()).toBeGreaterThan(new Date(before).getTime());
  });

  it('a login’s configTypes are kept as config-type ids (names mapped, unknown dropped), and still pick the configs', async () => {
    const login = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: {
        username: user.username,
        password: user.password,
        configTypes: ['intercept.v1', 'nope', 'host.v1', 'g7cIWbcGg'],
      },
    });
    expect(login.status, login.text).toBe(200);
    const kept = ['NH5p4FpGR', 'g7cIWbcGg'];
    const sorted = (types: string[]) => [...types].sort();
    expect(sorted(login.json.data.configTypes)).toEqual(kept);
    const token = login.json.data.token as string;
    const current = await e.call('client', { path: '/current-api-session', token });
    expect(sorted(current.json.data.configTypes)).toEqual(kept);
    const detail = await admin({ path: `/api-sessions/${login.json.data.id}` });
    expect(sorted(detail.json.data.configTypes)).toEqual(kept);
    const listed = await admin({ path: `/api-sessions?filter=${encodeURIComponent(`id = "${login.json.data.id}"`)}` });
    expect(listed.json.data.map((x: { configTypes: string[] }) => sorted(x.configTypes))).toEqual([kept]);
    // The service list reads the session's ids as it read the names.
    const services = await e.call('client', { path: '/services?limit=500', token });
    const s1 = services.json.data.find((x: { id: string }) => x.id === n.s1);
    expect(Object.keys(s1.config).sort()).toEqual(['host.v1', 'intercept.v1']);

    // `all` is just ["all"]; only unknown values keep nothing (and pick no config).
    const all = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: user.username, password: user.password, configTypes: ['host.v1', 'all', 'nope'] },
    });
    expect(all.json.data.configTypes).toEqual(['all']);
    const unknown = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: user.username, password: user.password, configTypes: ['nope', 'nope'] },
    });
    expect(unknown.json.data.configTypes).toEqual([]);
    const none = await e.call('client', { path: `/services/${n.s1}`, token: unknown.json.data.token as string });
    expect(none.json.data.config).toEqual({});
  });

  it('a changed config reaches the list and moves service-updates', async () => {
    const before = (await client({ path: '/current-api-session/service-updates' })).json.data.lastChangeAt;
    expect(
      (
        await admin({
          method: 'PATCH',
          path: `/configs/${n.c2}`,
          body: { data: { protocol: 'tcp', address: 'localhost', port: 9090 } },
        })
      ).status,
    ).toBe(200);
    await waitFor(async () => {
      const s = (await clientServices('&configTypes=host.v1')).find((x) => x.id === n.s1)!;
      return (s.config['host.v1'] as { port: number } | undefined)?.port === 9090;
    }, 'the changed config');
    const after = (await client({ path: '/current-api-session/service-updates' })).json.data.lastChangeAt;
    expect(new Date(after).getTime()).toBeGreaterThan(new Date(before).getTime());
  });

  it('GET /services/{id} answers a granted service and 404 for one without a policy', async () => {
    const ok = await client({ path: `/services/${n.s2}` });
    expect(ok.status).toBe(200);
    expect(ok.json.data.permissions).toEqual(['Bind', 'Dial']);
    const hidden = await client({ path: `/services/${n.s4}` });
    expect(hidden.status).toBe(404);
    expect(hidden.json.error.code).toBe('NOT_FOUND');
    expect((await client({ path: '/services/nope' })).status).toBe(404);
  });

  it('losing an attribute, a policy or the service removes the access, and service-updates moves each time', async () => {
    const stamp = async () =>
      new Date((await client({ path: '/current-api-session/service-updates' })).json.data.lastChangeAt).getTime();
    let last = await stamp();
    const moved = async () => {
      const now = await waitFor(async () => {
        const t = await stamp();
        return t > last ? t : 0;
      }, 'service-updates to move');
      last = now;
    };
    // Without #b the AllOf bind policy no longer selects the user: s2 is dial only.
    expect(
      (await admin({ method: 'PATCH', path: `/identities/${user.id}`, body: { roleAttributes: [attr.a] } })).status,
    ).toBe(200);
    await waitFor(
      async () => (await clientServices()).find((s) => s.id === n.s2)?.permissions.join() === 'Dial',
      'bind lost',
    );
    await moved();
    // The dial policy goes: only s3 (by @id) is left.
    expect((await admin({ method: 'DELETE', path: `/service-policies/${n.dial}` })).status).toBe(200);
    await eventually([n.s3!]);
    await moved();
    // The service goes: nothing is left.
    expect((await admin({ method: 'DELETE', path: `/services/${n.s3}` })).status).toBe(200);
    await eventually([]);
    await moved();
    expect((await client({ path: `/services/${n.s3}` })).status).toBe(404);
  });
});

describe('management service reads', () => {
  it('an administrator sees every service, with Invalid where no policy grants it and its own permissions where one does', async () => {
    const res = await admin({ path: `/services?filter=${encodeURIComponent(`id in ["${n.s1}","${n.s4}"]`)}` });
    expect(res.status).toBe(200);
    const perms = Object.fromEntries(res.json.data.map((s: ServiceItem) => [s.id, s.permissions]));
    expect(perms).toEqual({ [n.s1!]: ['Invalid'], [n.s4!]: ['Invalid'] });
    const adminId = (await admin({ path: '/current-identity' })).json.data.id as string;
    const p = await create('/service-policies', {
      name: uniqueName('adm'),
      type: 'Bind',
      semantic: 'AnyOf',
      identityRoles: [`@${adminId}`],
      serviceRoles: [`@${n.s4}`],
    });
    // Read-your-writes: the same session sees the policy's effect at once.
    const detail = await admin({ path: `/services/${n.s4}` });
    expect(detail.status).toBe(200);
    expect(detail.json.data.permissions).toEqual(['Bind']);
    expect(detail.json.data.postureQueries).toEqual([
      {
        policyId: 'dummy bind policy: no posture checks defined',
        policyType: 'Bind',
        isPassing: true,
        postureQueries: [],
      },
    ]);
    // Services listed for a relation carry the caller's permissions too, as every service detail does.
    const related = await admin({ path: `/service-policies/${p}/services` });
    expect(related.json.data.map((s: ServiceItem) => [s.id, s.permissions])).toEqual([[n.s4, ['Bind']]]);
    expect((await admin({ method: 'DELETE', path: `/service-policies/${p}` })).status).toBe(200);
    expect((await admin({ path: `/services/${n.s4}` })).json.data.permissions).toEqual(['Invalid']);
  });

  it('roleFilter, configTypes (first value, comma separated) and /configs/{id}/services', async () => {
    const res = await admin({ path: `/services?roleFilter=%23${attr.sy}&roleSemantic=AllOf&limit=100` });
    expect(res.status).toBe(200);
    expect(res.json.data.map((s: ServiceItem) => s.id).sort()).toEqual([n.s2, n.s4].sort());
    const withConfig = await admin({ path: `/services/${n.s1}` });
    expect(withConfig.json.data.config).toEqual({});
    const listed = await admin({
      path: `/services?configTypes=intercept.v1,host.v1&filter=${encodeURIComponent(`id = "${n.s1}"`)}`,
    });
    expect(Object.keys(listed.json.data[0].config).sort()).toEqual(['host.v1', 'intercept.v1']);
    const byConfig = await admin({ path: `/configs/${n.c1}/services` });
    expect(byConfig.status).toBe(200);
    expect(byConfig.json.data.map((s: ServiceItem) => s.id)).toEqual([n.s1]);
    expect((await admin({ path: '/configs/nope/services' })).status).toBe(404);
    expect((await admin({ path: '/services/nope' })).status).toBe(404);
  });

  it('asIdentity (id or name) lists the services as that identity sees them; with a role filter every match, with its permissions; unknown → 404', async () => {
    const name = uniqueName('as');
    const viewer = await create('/identities', { name, type: 'User', isAdmin: false });
    const own = await create('/services', { name: uniqueName('own'), encryptionRequired: true });
    await create('/service-policies', {
      name: uniqueName('own'),
      type: 'Bind',
      semantic: 'AnyOf',
      identityRoles: [`@${viewer}`],
      serviceRoles: [`@${own}`],
    });
    for (const as of [viewer, name]) {
      const res = await admin({ path: `/services?asIdentity=${encodeURIComponent(as)}&limit=500` });
      expect(res.status, res.text).toBe(200);
      expect(res.json.data.map((s: ServiceItem) => [s.id, s.permissions])).toEqual([[own, ['Bind']]]);
      expect(res.json.meta.pagination.totalCount).toBe(1);
    }
    // Without it the administrator's own view: every service, this one without a grant of its own.
    const mine = await admin({ path: `/services?filter=${encodeURIComponent(`id = "${own}"`)}` });
    expect(mine.json.data.map((s: ServiceItem) => s.permissions)).toEqual([['Invalid']]);
    const filtered = await admin({ path: `/services?asIdentity=${viewer}&roleFilter=%23${attr.sy}&limit=100` });
    expect(filtered.status, filtered.text).toBe(200);
    expect(filtered.json.data.map((s: ServiceItem) => [s.id, s.permissions]).sort()).toEqual(
      [
        [n.s2, ['Invalid']],
        [n.s4, ['Invalid']],
      ].sort(),
    );
    const unknown = await admin({ path: '/services?asIdentity=nobody-by-that-name' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatchObject({
      code: 'NOT_FOUND',
      cause: { code: 'UNHANDLED', message: 'identity with id or name nobody-by-that-name not found' },
    });
    // The client API does not honour it: the caller's own view.
    const client = await e.call('client', { path: `/services?asIdentity=${viewer}&limit=500`, token: user.token });
    expect(client.status).toBe(200);
    expect(client.json.data.map((s: ServiceItem) => s.id)).not.toContain(own);
  });

  it('who may call: no token → 401 everywhere; a non-admin may not use the management reads', async () => {
    for (const [api, path] of [
      ['client', '/services'],
      ['client', `/services/${n.s1}`],
      ['client', '/current-api-session/service-updates'],
      ['management', '/services'],
      ['management', `/services/${n.s1}`],
      ['management', `/configs/${n.c1}/services`],
    ] as const) {
      const anonymous = await e.call(api, { path });
      expect(anonymous.status, `${api} ${path}`).toBe(401);
      expect(anonymous.json.error.code).toBe('UNAUTHORIZED');
    }
    for (const path of ['/services', `/services/${n.s1}`, `/configs/${n.c1}/services`]) {
      const res = await e.call('management', { path, token: user.token });
      expect(res.status, path).toBe(401);
    }
  });
});

describe('client GET /services/{id}/terminators', () => {
  it("lists a visible service's terminators in the client shape, filtered and paged; an invisible service is 404", async () => {
    // A service granted to the user by @id, and one granted to nobody.
    const shown = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const hiddenService = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    await create('/service-policies', {
      name: uniqueName('dial'),
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: [`@${user.id}`],
      serviceRoles: [`@${shown}`],
    });
    await waitFor(async () => (await client({ path: `/services/${shown}` })).status === 200, 'the granted service');
    const router = await create('/transit-routers', { name: uniqueName('tr') });
    const terminator = (identity: string) =>
      create('/terminators', {
        service: shown,
        router,
        binding: 'transport',
        address: `tcp:10.0.0.${identity.length}:443`,
        identity,
      });
    const t1 = await terminator('host-one');
    const t2 = await terminator('host-two');
    // Another service's terminator is not listed.
    await create('/terminators', { service: hiddenService, router, binding: 'transport', address: 'tcp:10.0.0.9:443' });

    const all = await client({ path: `/services/${shown}/terminators` });
    expect(all.status, all.text).toBe(200);
    const items = all.json.data as Record<string, unknown>[];
    expect(items.map((t) => t.id).sort()).toEqual([t1, t2].sort());
    const one = items.find((t) => t.id === t1)!;
    expect(one).toMatchObject({ serviceId: shown, routerId: router, identity: 'host-one' });
    expect(one.service).toMatchObject({ id: shown, entity: 'services' });
    // What only administrators see of a terminator is not in the client shape.
    expect(one).not.toHaveProperty('address');
    expect(one).not.toHaveProperty('binding');
    expect(all.json.meta.pagination).toMatchObject({ totalCount: 2 });

    const filtered = await client({
      path: `/services/${shown}/terminators?filter=${encodeURIComponent('instanceId = "host-two"')}&limit=1`,
    });
    expect(filtered.status, filtered.text).toBe(200);
    expect((filtered.json.data as { id: string }[]).map((t) => t.id)).toEqual([t2]);

    // A service not granted to the user: not found, as one that does not exist.
    for (const id of [hiddenService, 'no-such-service']) {
      const hidden = await client({ path: `/services/${id}/terminators` });
      expect(hidden.status).toBe(404);
      expect(hidden.json.error.code).toBe('NOT_FOUND');
    }
    const bad = await client({ path: `/services/${shown}/terminators?filter=${encodeURIComponent('nope = 1')}` });
    expect(bad.status).toBe(400);
    // Administrators see any service's terminators.
    const asAdmin = await e.call('client', { path: `/services/${hiddenService}/terminators`, token: e.adminToken });
    expect(asAdmin.status).toBe(200);
    expect((asAdmin.json.data as unknown[]).length).toBe(1);
  });
});
