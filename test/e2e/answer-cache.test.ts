import type { IdentityDetail, ServiceDetail } from '@ziti/contracts/generated/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, authPolicyBody, base, startE2e } from '../support/e2e.ts';
import { createHttpClient } from '../support/http.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * The gateway keeps `/current-identity` answers (docs/adr/0015). Two gateway replicas: every kind of
 * change to what the answer shows reaches an identity's kept answer on both gateways within a
 * bounded delay, its author sees its own change on the other gateway at once, and the gateways did
 * answer from what they kept (their metrics say so).
 */
let e: E2e;
let gateways: ReturnType<typeof createHttpClient>[];

beforeAll(async () => {
  e = await startE2e({ replicas: { gateway: 2 } });
  gateways = e.cluster.gatewayPorts().map((p) => createHttpClient(`https://127.0.0.1:${p}`, e.caPems.join('')));
  expect(gateways).toHaveLength(2);
});
afterAll(async () => {
  await e?.stop();
});

/** `GET /current-identity` through gateway `g`, validated against the client spec. */
async function current(token: string, g: number) {
  const path = `${base.client}/current-identity`;
  const res = await gateways[g]!({ path, headers: { 'zt-session': token } });
  e.validator.validate('client', 'GET', path, res.status, res.json ?? undefined, String(res.headers['content-type']));
  expect(res.status).toBe(200);
  return res.json.data as IdentityDetail;
}

const mgmt = (method: string, path: string, body?: unknown) =>
  e.call('management', { method, path, token: e.adminToken, ...(body === undefined ? {} : { body }) });

/** Answers kept and served (of one operation, or all), summed over both gateways' `/metrics`. */
async function hits(operation?: string): Promise<number> {
  let total = 0;
  for (const p of e.cluster.processes().filter((x) => x.service === 'gateway')) {
    const text = await (await fetch(`http://127.0.0.1:${p.healthPort}/metrics`)).text();
    for (const line of text.split('\n'))
      if (
        line.startsWith('ziti_gateway_answer_cache_lookups_total{') &&
        line.includes('result="hit"') &&
        (operation === undefined || line.includes(`operation="${operation}"`))
      )
        total += Number(line.split(' ').at(-1));
  }
  return total;
}

/** Waits until both gateways answer `check`-true for the identity's session (each read warms the cache). */
async function bothSee(token: string, check: (d: IdentityDetail) => boolean, what: string) {
  for (const g of [0, 1])
    await waitFor(async () => check(await current(token, g)), `${what} (gateway ${g + 1})`, 10_000);
}

describe('the gateway answer cache', () => {
  it('answers repeated reads itself, and every change reaches the kept answers on both gateways', async () => {
    const user = await e.createUser();
    const before = await hits();
    // Warm both gateways, then read again: these are answered from what they kept (once a gateway
    // follows the owners' events, which a loaded machine may take a moment to start).
    await waitFor(
      async () => {
        for (const g of [0, 1]) await current(user.token, g);
        return (await hits()) > before;
      },
      'repeated reads answered from what the gateways kept',
      15_000,
    );

    // The identity itself.
    const tag = uniqueName('t');
    expect((await mgmt('PATCH', `/identities/${user.id}`, { tags: { tag }, roleAttributes: ['cache'] })).status).toBe(
      200,
    );
    await bothSee(user.token, (d) => d.tags?.tag === tag && d.roleAttributes?.[0] === 'cache', 'the identity patch');

    // Its updb authenticator (the username the answer shows).
    const username = uniqueName('renamed');
    expect((await mgmt('PATCH', `/authenticators/${user.authenticatorId}`, { username })).status).toBe(200);
    await bothSee(user.token, (d) => d.authenticators?.updb?.username === username, 'the authenticator rename');

    // Its auth policy's name.
    const policy = await mgmt('POST', '/auth-policies', authPolicyBody());
    expect(policy.status).toBe(201);
    const policyId = policy.json.data.id as string;
    expect((await mgmt('PATCH', `/identities/${user.id}`, { authPolicyId: policyId })).status).toBe(200);
    await bothSee(user.token, (d) => d.authPolicyId === policyId, 'the auth policy assignment');
    const renamed = uniqueName('renamed-policy');
    expect((await mgmt('PATCH', `/auth-policies/${policyId}`, { name: renamed })).status).toBe(200);
    await bothSee(user.token, (d) => d.authPolicy?.name === renamed, 'the auth policy rename');

    // An enrollment (pki-enrollment's), shown with its token, and its removal.
    const enrollment = await mgmt('POST', '/enrollments', {
      method: 'ott',
      identityId: user.id,
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(enrollment.status).toBe(201);
    const enrollmentId = enrollment.json.data.id as string;
    await bothSee(user.token, (d) => d.enrollment?.ott?.id === enrollmentId, 'the new enrollment');
    expect((await mgmt('DELETE', `/enrollments/${enrollmentId}`)).status).toBe(200);
    await bothSee(user.token, (d) => d.enrollment?.ott === undefined, 'the deleted enrollment');

    // A login of the identity records its client's envInfo.
    const os = uniqueName('os');
    const login = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username, password: user.password, envInfo: { os } },
    });
    expect(login.status).toBe(200);
    await bothSee(user.token, (d) => d.envInfo?.os === os, 'the envInfo of a login');
  });

  it("an author's own change shows on the other gateway at once (50 rounds)", async () => {
    const admin = await current(e.adminToken, 0);
    let stale = 0;
    for (let i = 0; i < 50; i++) {
      const write = i % 2;
      expect((await mgmt('PATCH', `/identities/${admin.id}`, { tags: { round: i } })).status).toBe(200);
      // Written through the first gateway (e.call); read through either, alternately.
      const read = await current(e.adminToken, write === 0 ? 1 : 0);
      if (read.tags?.round !== i) stale++;
    }
    expect(stale).toBe(0);
  });
});

/** The client's `GET /services` (a path with its query) through gateway `g`, validated against the client spec. */
async function services(token: string, g: number, query = '?limit=500') {
  const path = `${base.client}/services${query}`;
  const res = await gateways[g]!({ path, headers: { 'zt-session': token } });
  e.validator.validate('client', 'GET', path, res.status, res.json ?? undefined, String(res.headers['content-type']));
  expect(res.status, res.text).toBe(200);
  return res.json.data as ServiceDetail[];
}

/** Waits until both gateways list services for the session that `check` accepts. */
async function bothList(token: string, check: (l: ServiceDetail[]) => boolean, what: string, query?: string) {
  for (const g of [0, 1])
    await waitFor(async () => check(await services(token, g, query)), `${what} (gateway ${g + 1})`, 10_000);
}

const created = async (path: string, body: unknown) => {
  const res = await mgmt('POST', path, body);
  expect(res.status, res.text).toBe(201);
  return res.json.data.id as string;
};

describe('kept client service reads', () => {
  it('every change to what a service list shows reaches both gateways, and posture checks are never kept', async () => {
    const idAttr = uniqueName('who');
    const svcAttr = uniqueName('what');
    const user = await e.createUser({ roleAttributes: [idAttr] });
    const policyId = await created('/service-policies', {
      name: uniqueName('sp'),
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: [`#${idAttr}`],
      serviceRoles: [`#${svcAttr}`],
    });
    const name = uniqueName('svc');
    const serviceId = await created('/services', { name, roleAttributes: [svcAttr], encryptionRequired: true });
    const mine = (l: ServiceDetail[]) => l.find((x) => x.id === serviceId);
    await bothList(user.token, (l) => mine(l)?.name === name, 'the new service');
    const before = await hits('client.listServices');
    for (let i = 0; i < 3; i++) for (const g of [0, 1]) await services(user.token, g);
    expect(await hits('client.listServices')).toBeGreaterThan(before);

    // The service (inventory's), the identity's attributes (auth's), the policy (policy's).
    const renamed = uniqueName('renamed');
    expect((await mgmt('PATCH', `/services/${serviceId}`, { name: renamed })).status).toBe(200);
    await bothList(user.token, (l) => mine(l)?.name === renamed, 'the service rename');
    expect((await mgmt('PATCH', `/identities/${user.id}`, { roleAttributes: [] })).status).toBe(200);
    await bothList(user.token, (l) => mine(l) === undefined, 'the identity losing its attribute');
    expect((await mgmt('PATCH', `/identities/${user.id}`, { roleAttributes: [idAttr] })).status).toBe(200);
    await bothList(user.token, (l) => mine(l) !== undefined, 'the identity regaining its attribute');
    expect((await mgmt('PATCH', `/service-policies/${policyId}`, { type: 'Bind' })).status).toBe(200);
    await bothList(user.token, (l) => mine(l)?.permissions?.join() === 'Bind', 'the policy turned Bind');

    // A config, its data, and the identity's override of it (configTypes asked for in the URL).
    const typeName = uniqueName('ct');
    const typeId = await created('/config-types', { name: typeName, schema: {} });
    const configId = await created('/configs', { name: uniqueName('cfg'), configTypeId: typeId, data: { v: 1 } });
    const override = await created('/configs', { name: uniqueName('cfg'), configTypeId: typeId, data: { v: 3 } });
    expect((await mgmt('PATCH', `/services/${serviceId}`, { configs: [configId] })).status).toBe(200);
    const configured = (v: number) => (l: ServiceDetail[]) =>
      (mine(l)?.config as Record<string, { v?: number }> | undefined)?.[typeName]?.v === v;
    await bothList(user.token, configured(1), 'the attached config', '?limit=500&configTypes=all');
    expect((await mgmt('PATCH', `/configs/${configId}`, { data: { v: 2 } })).status).toBe(200);
    await bothList(user.token, configured(2), 'the config data change', '?limit=500&configTypes=all');
    const add = await mgmt('POST', `/identities/${user.id}/service-configs`, [{ serviceId, configId: override }]);
    expect(add.status, add.text).toBe(200);
    await bothList(user.token, configured(3), 'the override', '?limit=500&configTypes=all');

    // With a posture check anywhere, the answers depend on the clock and on posture data: never kept.
    const checkId = await created('/posture-checks', { name: uniqueName('pc'), typeId: 'DOMAIN', domains: ['x.y'] });
    await bothList(user.token, (l) => (mine(l)?.postureQueries?.[0]?.policyId ?? '') === policyId, 'the posture check');
    const whileChecked = await hits('client.listServices');
    for (let i = 0; i < 3; i++) for (const g of [0, 1]) await services(user.token, g);
    expect(await hits('client.listServices')).toBe(whileChecked);
    expect((await mgmt('DELETE', `/posture-checks/${checkId}`)).status).toBe(200);
    await bothList(user.token, (l) => (mine(l)?.postureQueries?.[0]?.policyId ?? '').startsWith('dummy'), 'no check');
    for (let i = 0; i < 3; i++) for (const g of [0, 1]) await services(user.token, g);
    expect(await hits('client.listServices')).toBeGreaterThan(whileChecked);
  });

  it("an author's new service is in its own list on the other gateway at once (20 rounds)", async () => {
    // The administrator sees every service; the same page each time, kept by both gateways.
    for (const g of [0, 1]) await services(e.adminToken, g);
    const before = await hits('client.listServices');
    let stale = 0;
    for (let i = 0; i < 20; i++) {
      const id = await created('/services', { name: uniqueName('own'), encryptionRequired: true });
      if (!(await services(e.adminToken, i % 2 === 0 ? 1 : 0)).some((x) => x.id === id)) stale++;
      // Read again (its own write is older than what the gateway now keeps): answered from the cache.
      await services(e.adminToken, i % 2 === 0 ? 1 : 0);
    }
    expect(stale).toBe(0);
    expect(await hits('client.listServices')).toBeGreaterThan(before);
  });
});
