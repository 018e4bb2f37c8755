import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Posture end to end (ZITI-FACTS §6.3, §7.3): the fixed posture check types; posture checks of every
 * type with their validation; service policies selecting them by postureCheckRoles; posture
 * responses and an identity's posture data; the posture queries of a caller's services, evaluated
 * against what its client reported and its API session (MFA); who may call what.
 */
let e: E2e;
let user: Awaited<ReturnType<E2e['createUser']>>;
const attr = { user: uniqueName('pu'), svc: uniqueName('ps'), check: uniqueName('pc'), mfa: uniqueName('pm') };
const n: Record<string, string> = {};

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });
const client = (req: Parameters<E2e['call']>[1]) => e.call('client', { ...req, token: user.token });

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.json.data.id as string;
}
const detail = async (path: string) => {
  const res = await admin({ path });
  expect(res.status, res.text).toBe(200);
  return res.json.data;
};
const expectField = (res: Awaited<ReturnType<E2e['call']>>, field: string) => {
  expect(res.status, res.text).toBe(400);
  expect(res.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } });
};

interface Queries {
  policyId: string;
  policyType: string;
  isPassing: boolean;
  postureQueries: { id: string; queryType: string; isPassing: boolean; timeout: number; timeoutRemaining: number }[];
}
async function postureQueriesOf(serviceId: string): Promise<Queries[]> {
  const res = await client({ path: `/services/${serviceId}` });
  expect(res.status, res.text).toBe(200);
  return res.json.data.postureQueries as Queries[];
}

beforeAll(async () => {
  e = await startE2e();
  user = await e.createUser({ roleAttributes: [attr.user] });
  n.service = await create('/services', {
    name: uniqueName('svc'),
    encryptionRequired: true,
    roleAttributes: [attr.svc],
  });
  n.mfaService = await create('/services', {
    name: uniqueName('svc'),
    encryptionRequired: true,
    roleAttributes: [attr.mfa],
  });
});
afterAll(async () => {
  await e?.stop();
});

describe('posture check types', () => {
  it('lists the fixed types with paging and filter, and details one', async () => {
    const all = await admin({ path: '/posture-check-types' });
    expect(all.status).toBe(200);
    expect(all.json.meta.pagination).toMatchObject({ limit: 10, offset: 0, totalCount: 5 });
    expect(all.json.data.map((t: { id: string }) => t.id)).toEqual(['DOMAIN', 'MAC', 'OS', 'PROCESS', 'PROCESS_MULTI']);
    const page = await admin({
      path: `/posture-check-types?limit=2&offset=1&filter=${encodeURIComponent('true sort by name')}`,
    });
    expect(page.json.meta.pagination).toMatchObject({ limit: 2, offset: 1, totalCount: 5 });
    expect(page.json.data.map((t: { name: string }) => t.name)).toEqual(['Operating System Check', 'Process Check']);
    const os = await detail('/posture-check-types/OS');
    expect(os).toMatchObject({
      id: 'OS',
      name: 'Operating System Check',
      _links: { self: { href: './posture-check-types/OS' } },
    });
    expect(os.operatingSystems).toContainEqual({ type: 'Windows', versions: ['Vista', '7', '8', '10', '2000'] });
    expect((await detail('/posture-check-types/PROCESS_MULTI')).operatingSystems).toEqual([
      { type: 'Linux', versions: [] },
      { type: 'Windows', versions: [] },
      { type: 'macOS', versions: [] },
    ]);
    const missing = await admin({ path: '/posture-check-types/MFA' });
    expect(missing.status).toBe(404);
    expect(missing.json.error.code).toBe('NOT_FOUND');
  });
});

describe('posture checks', () => {
  const bodies = (): Record<string, Record<string, unknown>> => ({
    OS: { typeId: 'OS', operatingSystems: [{ type: 'Windows', versions: ['>=10.0.0 <11.0.0'] }] },
    MAC: { typeId: 'MAC', macAddresses: ['AA:BB:CC:DD:EE:01'] },
    DOMAIN: { typeId: 'DOMAIN', domains: ['corp.example'] },
    PROCESS: { typeId: 'PROCESS', process: { osType: 'Linux', path: '/usr/bin/agent', hashes: ['ab12'] } },
    PROCESS_MULTI: {
      typeId: 'PROCESS_MULTI',
      semantic: 'AnyOf',
      processes: [{ osType: 'Windows', path: 'C:\\agent.exe', signerFingerprints: ['ff00'] }],
    },
    MFA: { typeId: 'MFA', timeoutSeconds: 300, promptOnWake: true, promptOnUnlock: false, ignoreLegacyEndpoints: true },
  });

  it('concurrent PATCHes of different fields of a check both survive (the row is locked while it changes)', async () => {
    for (let i = 0; i < 5; i++) {
      const id = await create('/posture-checks', {
        name: uniqueName('lock-pc'),
        typeId: 'DOMAIN',
        domains: ['a.example'],
      });
      const [a, b] = await Promise.all([
        admin({
          method: 'PATCH',
          path: `/posture-checks/${id}`,
          body: { typeId: 'DOMAIN', roleAttributes: [`lock${i}`] },
        }),
        admin({
          method: 'PATCH',
          path: `/posture-checks/${id}`,
          body: { typeId: 'DOMAIN', tags: { round: String(i) } },
        }),
      ]);
      expect([a.status, b.status], `${a.text} ${b.text}`).toEqual([200, 200]);
      const after = await detail(`/posture-checks/${id}`);
      expect(after.roleAttributes).toEqual([`lock${i}`]);
      expect(after.tags).toMatchObject({ round: String(i) });
    }
  });

  it('creates, details, patches, replaces and deletes a check of every type', async () => {
    for (const [typeId, body] of Object.entries(bodies())) {
      const name = uniqueName(typeId.toLowerCase());
      const id = await create('/posture-checks', { name, roleAttributes: ['b', 'a'], tags: { t: '1' }, ...body });
      const d = await detail(`/posture-checks/${id}`);
      expect(d, typeId).toMatchObject({
        id,
        name,
        typeId,
        version: 1,
        roleAttributes: ['a', 'b'],
        tags: { t: '1' },
        _links: { self: { href: `./posture-checks/${id}` } },
      });
      const patched = await admin({
        method: 'PATCH',
        path: `/posture-checks/${id}`,
        body: { typeId, name: `${name}-p` },
      });
      expect(patched.status, patched.text).toBe(200);
      expect(await detail(`/posture-checks/${id}`)).toMatchObject({ name: `${name}-p`, roleAttributes: ['a', 'b'] });
      const put = await admin({ method: 'PUT', path: `/posture-checks/${id}`, body: { name: `${name}-r`, ...body } });
      expect(put.status, put.text).toBe(200);
      expect(await detail(`/posture-checks/${id}`)).toMatchObject({ name: `${name}-r`, roleAttributes: [], tags: {} });
      expect((await admin({ method: 'DELETE', path: `/posture-checks/${id}` })).status).toBe(200);
      const gone = await admin({ path: `/posture-checks/${id}` });
      expect(gone.status).toBe(404);
      expect(gone.json.error.cause.message).toBe(`postureCheck with id ${id} not found`);
    }
  });

  it('shows the type fields of each type as stored (MAC cleaned, MFA timeout -1 when none)', async () => {
    const mac = await create('/posture-checks', { name: uniqueName('mac'), ...bodies().MAC });
    expect((await detail(`/posture-checks/${mac}`)).macAddresses).toEqual(['aabbccddee01']);
    const mfa = await create('/posture-checks', { name: uniqueName('mfa'), typeId: 'MFA', timeoutSeconds: 0 });
    expect(await detail(`/posture-checks/${mfa}`)).toMatchObject({
      timeoutSeconds: -1,
      promptOnWake: false,
      promptOnUnlock: false,
      ignoreLegacyEndpoints: false,
    });
    const multi = await create('/posture-checks', { name: uniqueName('pm'), ...bodies().PROCESS_MULTI });
    expect((await detail(`/posture-checks/${multi}`)).processes).toEqual([
      { osType: 'Windows', path: 'C:\\agent.exe', hashes: [], signerFingerprints: ['ff00'] },
    ]);
    const patched = await admin({
      method: 'PATCH',
      path: `/posture-checks/${mfa}`,
      body: { typeId: 'MFA', promptOnUnlock: true, timeoutSeconds: 60 },
    });
    expect(patched.status).toBe(200);
    expect(await detail(`/posture-checks/${mfa}`)).toMatchObject({ timeoutSeconds: 60, promptOnUnlock: true });
  });

  it('refuses invalid bodies with the field', async () => {
    const post = (body: Record<string, unknown>) =>
      admin({ method: 'POST', path: '/posture-checks', body: { name: uniqueName('bad'), ...body } });
    expectField(
      await post({ typeId: 'OS', operatingSystems: [{ type: 'Windows', versions: ['10'] }] }),
      'operatingSystems[Windows][0]',
    );
    expectField(
      await post({ typeId: 'OS', operatingSystems: [{ type: 'Plan9', versions: [] }] }),
      'operatingSystems.0.type',
    );
    expectField(await post({ typeId: 'MAC', macAddresses: ['not-a-mac'] }), 'macAddresses[0]');
    expectField(await post({ typeId: 'MAC', macAddresses: [] }), 'macAddresses');
    expectField(await post({ typeId: 'DOMAIN', domains: [' '] }), 'domains[0]');
    expectField(await post({ typeId: 'PROCESS', process: { osType: 'Linux', path: '' } }), 'process.path');
    expectField(await post({ typeId: 'PROCESS_MULTI', processes: [{ osType: 'Linux', path: '/x' }] }), 'semantic');
    expectField(
      await post({ typeId: 'PROCESS_MULTI', semantic: 'AllOf', processes: [{ osType: 'Linux', path: ' ' }] }),
      'processes[0].path',
    );
    expectField(await post({ typeId: 'MFA', roleAttributes: ['#x'] }), 'roleAttributes');
    expectField(await post({ typeId: 'NOPE' }), 'typeId');
    expectField(await admin({ method: 'POST', path: '/posture-checks', body: { typeId: 'MFA' } }), 'name');
    const name = uniqueName('dup');
    await create('/posture-checks', { name, typeId: 'MFA' });
    const dup = await admin({
      method: 'POST',
      path: '/posture-checks',
      body: { name, typeId: 'DOMAIN', domains: ['x'] },
    });
    expectField(dup, 'name');
    expect(dup.json.error.cause.reason).toBe(`duplicate value '${name}' in unique index on postureChecks store`);
    const id = await create('/posture-checks', { name: uniqueName('d'), typeId: 'DOMAIN', domains: ['x'] });
    expectField(await admin({ method: 'PATCH', path: `/posture-checks/${id}`, body: { typeId: 'MAC' } }), 'typeId');
    expect((await admin({ method: 'PATCH', path: '/posture-checks/nope', body: { typeId: 'MAC' } })).status).toBe(404);
  });

  it('lists with filter, sort, paging and roleFilter, and lists role attributes', async () => {
    const a1 = uniqueName('ra');
    const a2 = uniqueName('rb');
    const one = await create('/posture-checks', { name: uniqueName('l1'), typeId: 'MFA', roleAttributes: [a1] });
    const two = await create('/posture-checks', { name: uniqueName('l2'), typeId: 'MFA', roleAttributes: [a1, a2] });
    const list = async (query: string) => {
      const res = await admin({ path: `/posture-checks?${query}` });
      expect(res.status, res.text).toBe(200);
      return res.json;
    };
    const both = await list(`filter=${encodeURIComponent(`anyOf(roleAttributes) = "${a1}" sort by name desc`)}`);
    expect(both.data.map((c: { id: string }) => c.id)).toEqual([two, one]);
    expect(both.meta.filterableFields).toEqual(expect.arrayContaining(['name', 'roleAttributes', 'promptOnWake']));
    const paged = await list(
      `limit=1&offset=1&sort=name&filter=${encodeURIComponent(`anyOf(roleAttributes) = "${a1}"`)}`,
    );
    expect(paged.meta.pagination).toMatchObject({ limit: 1, offset: 1, totalCount: 2 });
    expect(paged.data.map((c: { id: string }) => c.id)).toEqual([two]);
    const allOf = await list(`roleFilter=%23${a1}&roleFilter=%23${a2}`);
    expect(allOf.data.map((c: { id: string }) => c.id)).toEqual([two]);
    const anyOf = await list(`roleFilter=%23${a2}&roleFilter=%40${one}&roleSemantic=AnyOf&sort=name`);
    expect(anyOf.data.map((c: { id: string }) => c.id)).toEqual([one, two]);
    expect((await admin({ path: `/posture-checks?filter=${encodeURIComponent('nope = 1')}` })).json.error.code).toBe(
      'INVALID_FILTER',
    );
    const attrs = await admin({
      path: `/posture-check-role-attributes?filter=${encodeURIComponent(`id in ["${a1}","${a2}"] sort by id`)}`,
    });
    expect(attrs.status).toBe(200);
    expect(attrs.json.data).toEqual([a1, a2].sort());
  });
});

describe('service policies naming posture checks', () => {
  it('accepts existing posture check ids, shows their names and lists the selected checks', async () => {
    const checkName = uniqueName('named');
    const byId = await create('/posture-checks', { name: checkName, typeId: 'DOMAIN', domains: ['x'] });
    const tagged = uniqueName('tag');
    const byAttr = await create('/posture-checks', { name: uniqueName('a'), typeId: 'MFA', roleAttributes: [tagged] });
    const policy = await create('/service-policies', {
      name: uniqueName('sp'),
      type: 'Dial',
      semantic: 'AnyOf',
      postureCheckRoles: [`@${byId}`, `#${tagged}`],
    });
    const d = await detail(`/service-policies/${policy}`);
    expect(d.postureCheckRolesDisplay).toEqual([
      { role: `#${tagged}`, name: `#${tagged}` },
      { role: `@${byId}`, name: `@${checkName}` },
    ]);
    const listed = async () =>
      (await admin({ path: `/service-policies/${policy}/posture-checks?sort=name` })).json.data.map(
        (c: { id: string }) => c.id,
      );
    expect((await listed()).sort()).toEqual([byId, byAttr].sort());
    // Losing the attribute or deleting the check unlinks it; the deleted check's @id leaves the roles.
    expect(
      (await admin({ method: 'PATCH', path: `/posture-checks/${byAttr}`, body: { typeId: 'MFA', roleAttributes: [] } }))
        .status,
    ).toBe(200);
    expect(await listed()).toEqual([byId]);
    expect((await admin({ method: 'DELETE', path: `/posture-checks/${byId}` })).status).toBe(200);
    expect(await listed()).toEqual([]);
    expect((await detail(`/service-policies/${policy}`)).postureCheckRoles).toEqual([`#${tagged}`]);
    const unknown = await admin({
      method: 'PATCH',
      path: `/service-policies/${policy}`,
      body: { postureCheckRoles: ['@nope'] },
    });
    expectField(unknown, 'postureCheckRoles');
  });
});

describe('posture responses, posture data and posture queries', () => {
  it('a non-admin sees failing queries until its client reports a passing OS and MAC', async () => {
    n.os = await create('/posture-checks', {
      name: uniqueName('os'),
      typeId: 'OS',
      roleAttributes: [attr.check],
      operatingSystems: [{ type: 'Windows', versions: ['>=10.0.0'] }],
    });
    n.mac = await create('/posture-checks', {
      name: uniqueName('mac'),
      typeId: 'MAC',
      roleAttributes: [attr.check],
      macAddresses: ['aabbccddeeff'],
    });
    n.dial = await create('/service-policies', {
      name: uniqueName('dial'),
      type: 'Dial',
      semantic: 'AllOf',
      identityRoles: [`#${attr.user}`],
      serviceRoles: [`#${attr.svc}`],
      postureCheckRoles: [`#${attr.check}`],
    });
    const failing = await waitFor(async () => {
      const q = (await client({ path: `/services?filter=${encodeURIComponent(`id = "${n.service}"`)}` })).json.data;
      return q.length === 1 ? (q[0].postureQueries as Queries[]) : undefined;
    }, 'the service with its posture queries');
    expect(failing).toHaveLength(1);
    expect(failing[0]).toMatchObject({ policyId: n.dial, policyType: 'Dial', isPassing: false });
    expect(failing[0]!.postureQueries.map((q) => [q.id, q.queryType, q.isPassing, q.timeout]).sort()).toEqual(
      [
        [n.os, 'OS', false, -1],
        [n.mac, 'MAC', false, -1],
      ].sort(),
    );

    const os = await client({
      method: 'POST',
      path: '/posture-response',
      body: { id: n.os, typeId: 'OS', type: 'Windows', version: '10.0.19041', build: '19041' },
    });
    expect(os.status, os.text).toBe(201);
    expect(os.json.data).toEqual({ services: [] });
    let queries = (await postureQueriesOf(n.service!))[0]!;
    expect(queries.isPassing).toBe(false);
    expect(queries.postureQueries.find((q) => q.id === n.os)!.isPassing).toBe(true);

    const bulk = await client({
      method: 'POST',
      path: '/posture-response-bulk',
      body: [
        { id: n.mac, typeId: 'MAC', macAddresses: ['AA:BB:CC:DD:EE:FF', '11-22-33-44-55-66'] },
        { id: 'd', typeId: 'DOMAIN', domain: 'corp.example' },
        {
          id: 'p',
          typeId: 'PROCESS',
          path: '/usr/bin/agent',
          isRunning: true,
          hash: 'AB:12',
          signerFingerprints: ['FF'],
        },
        { id: 'e', typeId: 'ENDPOINT_STATE', woken: true },
      ],
    });
    expect(bulk.status, bulk.text).toBe(200);
    queries = (await postureQueriesOf(n.service!))[0]!;
    expect(queries.isPassing).toBe(true);
    expect(queries.postureQueries.every((q) => q.isPassing)).toBe(true);

    // A failing report fails the policy again.
    await client({
      method: 'POST',
      path: '/posture-response',
      body: { id: n.os, typeId: 'OS', type: 'Linux', version: '5.4.0' },
    });
    expect((await postureQueriesOf(n.service!))[0]!.isPassing).toBe(false);
    await client({
      method: 'POST',
      path: '/posture-response',
      body: { id: n.os, typeId: 'OS', type: 'windows', version: '10.1.0' },
    });
    expect((await postureQueriesOf(n.service!))[0]!.isPassing).toBe(true);
  });

  it('answers the identity posture data in the nested shape', async () => {
    const data = await detail(`/identities/${user.id}/posture-data`);
    expect(data.os).toMatchObject({ postureCheckId: n.os, type: 'windows', version: '10.1.0', timedOut: false });
    expect(data.mac).toMatchObject({ postureCheckId: n.mac, addresses: ['aabbccddeeff', '112233445566'] });
    expect(data.domain).toMatchObject({ postureCheckId: 'd', domain: 'corp.example' });
    expect(data.processes).toEqual([
      expect.objectContaining({ postureCheckId: 'p', isRunning: true, binaryHash: 'ab12', signerFingerprints: ['ff'] }),
    ]);
    expect((await admin({ path: '/identities/nope/posture-data' })).status).toBe(404);
  });

  it('lists every live API session of the identity, also one that reported nothing, until it ends', async () => {
    const zero = '0001-01-01T00:00:00.000Z';
    const first = (await client({ path: '/current-api-session' })).json.data.id as string;
    // A second login of the same identity, with SDK info, that reports no posture.
    const sdkInfo = { type: 'ziti-sdk-golang', version: '1.2.3', appId: uniqueName('app') };
    const login = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: user.username, password: user.password, sdkInfo },
    });
    expect(login.status, login.text).toBe(200);
    const second = login.json.data.id as string;

    const sessions = (await detail(`/identities/${user.id}/posture-data`)).apiSessionPostureData;
    expect(Object.keys(sessions).sort()).toEqual([first, second].sort());
    // The first reported a wake (above) and passed no MFA.
    expect(sessions[first].mfa).toEqual({
      apiSessionId: first,
      passedMfa: false,
      passedAt: zero,
      passedOnWake: false,
      passedOnUnlock: false,
    });
    expect(Date.parse(sessions[first].endpointState.wokenAt)).toBeGreaterThan(Date.now() - 120_000);
    expect(sessions[first].endpointState.unlockedAt).toBe(zero);
    // The second reported nothing; its SDK info is what it logged in with. (The first shows the
    // identity's last SDK info too: auth keeps none per API session, the reference the one at its login.)
    expect(sessions[second]).toEqual({
      mfa: { apiSessionId: second, passedMfa: false, passedAt: zero, passedOnWake: false, passedOnUnlock: false },
      endpointState: { wokenAt: zero, unlockedAt: zero },
      sdkInfo,
    });

    // Its logout ends its entry at once; the first stays.
    const logout = await e.call('client', {
      method: 'DELETE',
      path: '/current-api-session',
      token: login.json.data.token as string,
    });
    expect(logout.status, logout.text).toBe(200);
    const after = (await detail(`/identities/${user.id}/posture-data`)).apiSessionPostureData;
    expect(Object.keys(after)).toEqual([first]);
  });

  it('an MFA check fails for an API session that did not pass MFA', async () => {
    const mfa = await create('/posture-checks', {
      name: uniqueName('mfa'),
      typeId: 'MFA',
      roleAttributes: [attr.mfa],
      timeoutSeconds: 600,
    });
    const policy = await create('/service-policies', {
      name: uniqueName('bind'),
      type: 'Bind',
      semantic: 'AnyOf',
      identityRoles: [`@${user.id}`],
      serviceRoles: [`@${n.mfaService}`],
      postureCheckRoles: [`#${attr.mfa}`],
    });
    const queries = await waitFor(async () => {
      const res = await client({ path: `/services/${n.mfaService}` });
      return res.status === 200 ? (res.json.data.postureQueries as Queries[]) : undefined;
    }, 'the MFA service');
    expect(queries).toEqual([
      expect.objectContaining({
        policyId: policy,
        policyType: 'Bind',
        isPassing: false,
        postureQueries: [
          expect.objectContaining({ id: mfa, queryType: 'MFA', isPassing: false, timeout: 600, timeoutRemaining: 0 }),
        ],
      }),
    ]);
  });

  it('administrators see synthetic entries for services no policy grants them', async () => {
    const res = await admin({ path: `/services/${n.service}` });
    expect(res.status).toBe(200);
    expect(res.json.data.permissions).toEqual(['Invalid']);
    // The reference (1.1.9, seen by the differential suite) answers one passing entry per
    // permission when no policy grants the service, `Invalid` included.
    expect(res.json.data.postureQueries).toEqual([
      {
        policyId: 'dummy invalid policy: no posture checks defined',
        policyType: 'Invalid',
        isPassing: true,
        postureQueries: [],
      },
    ]);
  });
});

describe('callers', () => {
  it('answers 401 without a token and to non-admins on management operations', async () => {
    const anonymous = await e.call('client', {
      method: 'POST',
      path: '/posture-response',
      body: { id: 'x', typeId: 'DOMAIN', domain: 'x' },
    });
    expect(anonymous.status).toBe(401);
    const operations: [string, string, Record<string, unknown>?][] = [
      ['GET', '/posture-checks'],
      ['POST', '/posture-checks', { name: 'x', typeId: 'MFA' }],
      ['GET', `/posture-checks/${n.os}`],
      ['PATCH', `/posture-checks/${n.os}`, { typeId: 'OS' }],
      ['DELETE', `/posture-checks/${n.os}`],
      ['GET', '/posture-check-types'],
      ['GET', '/posture-check-types/OS'],
      ['GET', '/posture-check-role-attributes'],
      ['GET', `/identities/${user.id}/posture-data`],
    ];
    for (const [method, path, body] of operations) {
      for (const token of [undefined, user.token]) {
        const res = await e.call('management', {
          method,
          path,
          ...(body ? { body } : {}),
          ...(token ? { token } : {}),
        });
        expect(res.status, `${method} ${path} as ${token ? 'non-admin' : 'anonymous'}`).toBe(401);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
      }
    }
  });
});
