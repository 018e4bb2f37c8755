import { createGuardrails, generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Edge sessions (ZITI-FACTS §6.3, §10.1) end to end: the checks of a create in the reference's order
 * (visible → type permitted → posture → a shared edge router), one session per API session, service
 * and type, the edge routers in the reply, scoping of who may see and delete, and sessions ending
 * with their API session (logout, an administrator's delete, the identity disabled).
 */
let e: E2e;
type User = Awaited<ReturnType<E2e['createUser']>>;
let user: User;
let other: User;
const n: Record<string, string> = {};
const attr = uniqueName('u');

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });
const as = (u: User) => (req: Parameters<E2e['call']>[1]) => e.call('client', { ...req, token: u.token });

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.json.data.id as string;
}

const apiSessionOf = async (u: User) => (await as(u)({ path: '/current-api-session' })).json.data.id as string;
const sessionsOfApiSession = async (apiSessionId: string) =>
  (await admin({ path: `/sessions?filter=${encodeURIComponent(`apiSession = "${apiSessionId}"`)}` })).json.data as {
    id: string;
  }[];

/** A user's session create, retried while the policy view of another session's writes converges. */
async function createSession(u: User, body: Record<string, unknown>, status = 201) {
  return waitFor(
    async () => {
      const res = await as(u)({ method: 'POST', path: '/sessions', body });
      return res.status === status ? res : undefined;
    },
    `session create ${JSON.stringify(body)} → ${status}`,
  );
}

beforeAll(async () => {
  e = await startE2e();
  user = await e.createUser({ roleAttributes: [attr] });
  other = await e.createUser({ roleAttributes: [attr] });
  const service = (name: string) => create('/services', { name: uniqueName(name), encryptionRequired: true });
  n.s1 = await service('s1');
  n.s3 = await service('s3');
  n.s4 = await service('s4');
  n.r1 = await create('/edge-routers', { name: uniqueName('r1') });
  n.r2 = await create('/edge-routers', { name: uniqueName('r2') });
  n.dial = await create('/service-policies', {
    name: uniqueName('dial'),
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: [`#${attr}`],
    serviceRoles: [`@${n.s1}`, `@${n.s4}`],
  });
  await create('/edge-router-policies', {
    name: uniqueName('erp'),
    semantic: 'AnyOf',
    identityRoles: [`#${attr}`],
    edgeRouterRoles: [`@${n.r1}`],
  });
  // s1 may use r1 and r2; the identities only r1. s4 only r2: nothing shared.
  await create('/service-edge-router-policies', {
    name: uniqueName('serp'),
    semantic: 'AnyOf',
    serviceRoles: [`@${n.s1}`],
    edgeRouterRoles: [`@${n.r1}`, `@${n.r2}`],
  });
  await create('/service-edge-router-policies', {
    name: uniqueName('serp'),
    semantic: 'AnyOf',
    serviceRoles: [`@${n.s4}`],
    edgeRouterRoles: [`@${n.r2}`],
  });
});
afterAll(async () => {
  await e?.stop();
});

describe('client POST /sessions', () => {
  it('creates a dial session with the shared edge routers, and answers the same session again', async () => {
    const res = await createSession(user, { serviceId: n.s1 });
    expect(res.json.data).toMatchObject({
      serviceId: n.s1,
      identityId: user.id,
      apiSessionId: await apiSessionOf(user),
      type: 'Dial',
      service: { id: n.s1, entity: 'services' },
    });
    expect(res.json.data.token).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.json.data.edgeRouters.map((r: { name: string }) => r.name)).toHaveLength(1);
    expect(res.json.data.edgeRouters[0]).toMatchObject({ isOnline: false, urls: {}, supportedProtocols: {} });
    n.session = res.json.data.id;
    const again = await as(user)({ method: 'POST', path: '/sessions', body: { serviceId: n.s1, type: 'Dial' } });
    expect(again.status).toBe(201);
    expect(again.json.data.id).toBe(n.session);
    expect(again.json.data.token).toBe(res.json.data.token);
  });

  it('refuses in the reference order: invisible 404, type not permitted 400, no shared router 400', async () => {
    const hidden = await as(user)({ method: 'POST', path: '/sessions', body: { serviceId: n.s3 } });
    expect(hidden.status).toBe(404);
    expect(hidden.json.error.code).toBe('NOT_FOUND');
    const bind = await as(user)({ method: 'POST', path: '/sessions', body: { serviceId: n.s1, type: 'Bind' } });
    expect(bind.status).toBe(400);
    expect(bind.json.error.code).toBe('COULD_NOT_VALIDATE');
    expect(bind.json.error.cause).toMatchObject({ field: 'ServiceId', reason: 'service not found', value: n.s1 });
    const noRouter = await createSession(user, { serviceId: n.s4 }, 400);
    expect(noRouter.json.error.code).toBe('NO_EDGE_ROUTERS_AVAILABLE');
    const bad = await as(user)({ method: 'POST', path: '/sessions', body: { serviceId: n.s1, type: 'Both' } });
    expect(bad.status).toBe(400);
  });
});

describe('reading and deleting sessions', () => {
  it('an identity sees only its own sessions; another gets 404 on detail and delete', async () => {
    const mine = await as(user)({ path: '/sessions' });
    expect(mine.status).toBe(200);
    expect(mine.json.data.map((s: { id: string }) => s.id)).toEqual([n.session]);
    expect((await as(other)({ path: '/sessions' })).json.data).toEqual([]);
    expect((await as(other)({ path: `/sessions/${n.session}` })).status).toBe(404);
    expect((await as(other)({ method: 'DELETE', path: `/sessions/${n.session}` })).status).toBe(404);
    expect((await as(user)({ path: `/sessions/${n.session}` })).status).toBe(200);
  });

  it('administrators list with filters, read the detail with its service policies and the route path', async () => {
    for (const filter of [
      `apiSession = "${await apiSessionOf(user)}"`,
      `service = "${n.s1}" and type = "Dial"`,
      `identity = "${user.id}"`,
      `apiSession.identity = "${user.id}"`,
    ]) {
      const res = await admin({ path: `/sessions?filter=${encodeURIComponent(filter)}` });
      expect(res.status, filter).toBe(200);
      expect(res.json.data.map((s: { id: string }) => s.id)).toEqual([n.session]);
    }
    const detail = await admin({ path: `/sessions/${n.session}` });
    expect(detail.status).toBe(200);
    expect(detail.json.data.servicePolicies.map((p: { id: string }) => p.id)).toEqual([n.dial]);
    const path = await admin({ path: `/sessions/${n.session}/route-path` });
    expect(path.status).toBe(200);
    expect(path.json.data).toEqual({ routePath: [] });
    expect((await admin({ path: '/sessions/nope' })).status).toBe(404);
  });

  it('its owner deletes a session', async () => {
    const s = (await createSession(other, { serviceId: n.s1 })).json.data.id as string;
    expect((await as(other)({ method: 'DELETE', path: `/sessions/${s}` })).status).toBe(200);
    expect((await as(other)({ path: `/sessions/${s}` })).status).toBe(404);
  });
});

describe('sessions end with their API session', () => {
  it('logout removes them within seconds', async () => {
    const u = await e.createUser({ roleAttributes: [attr] });
    await createSession(u, { serviceId: n.s1 });
    const apiSessionId = await apiSessionOf(u);
    expect(await sessionsOfApiSession(apiSessionId)).toHaveLength(1);
    expect((await as(u)({ method: 'DELETE', path: '/current-api-session' })).status).toBe(200);
    await waitFor(async () => (await sessionsOfApiSession(apiSessionId)).length === 0, 'sessions gone', 10_000);
  });

  it('an administrator deleting the API session removes them', async () => {
    const u = await e.createUser({ roleAttributes: [attr] });
    await createSession(u, { serviceId: n.s1 });
    const apiSessionId = await apiSessionOf(u);
    expect((await admin({ method: 'DELETE', path: `/api-sessions/${apiSessionId}` })).status).toBe(200);
    await waitFor(async () => (await sessionsOfApiSession(apiSessionId)).length === 0, 'sessions gone', 10_000);
  });

  it('disabling the identity removes them', async () => {
    const u = await e.createUser({ roleAttributes: [attr] });
    await createSession(u, { serviceId: n.s1 });
    const apiSessionId = await apiSessionOf(u);
    const res = await admin({ method: 'POST', path: `/identities/${u.id}/disable`, body: { durationMinutes: 0 } });
    expect(res.status, res.text).toBe(200);
    await waitFor(async () => (await sessionsOfApiSession(apiSessionId)).length === 0, 'sessions gone', 10_000);
  });
});

describe('posture decides', () => {
  const postureAttr = uniqueName('pc');
  let guarded: string;
  let mfaGuarded: string;
  let osCheck: string;
  let macCheck: string;
  let dialPolicy: string;

  beforeAll(async () => {
    guarded = await create('/services', { name: uniqueName('guarded'), encryptionRequired: true });
    mfaGuarded = await create('/services', { name: uniqueName('mfa'), encryptionRequired: true });
    await create('/service-edge-router-policies', {
      name: uniqueName('serp'),
      semantic: 'AnyOf',
      serviceRoles: [`@${guarded}`, `@${mfaGuarded}`],
      edgeRouterRoles: [`@${n.r1}`],
    });
    osCheck = await create('/posture-checks', {
      name: uniqueName('os'),
      typeId: 'OS',
      roleAttributes: [postureAttr],
      operatingSystems: [{ type: 'Linux', versions: ['>=5.0.0'] }],
    });
    macCheck = await create('/posture-checks', {
      name: uniqueName('mac'),
      typeId: 'MAC',
      roleAttributes: [postureAttr],
      macAddresses: ['aabbccddeeff'],
    });
    dialPolicy = await create('/service-policies', {
      name: uniqueName('guarded'),
      type: 'Dial',
      semantic: 'AllOf',
      identityRoles: [`#${attr}`],
      serviceRoles: [`@${guarded}`],
      postureCheckRoles: [`#${postureAttr}`],
    });
    const mfaCheck = await create('/posture-checks', {
      name: uniqueName('mfa'),
      typeId: 'MFA',
      timeoutSeconds: 600,
    });
    await create('/service-policies', {
      name: uniqueName('mfa'),
      type: 'Dial',
      semantic: 'AllOf',
      identityRoles: [`#${attr}`],
      serviceRoles: [`@${mfaGuarded}`],
      postureCheckRoles: [`@${mfaCheck}`],
    });
  });

  it('an OS and a MAC check refuse a session (409 with the failing policy, recorded) until a passing posture is reported', async () => {
    const u = await e.createUser({ roleAttributes: [attr] });
    const refused = await createSession(u, { serviceId: guarded }, 409);
    expect(refused.json.error.code).toBe('INVALID_POSTURE');
    // The reference's cause: the failing policies, and per policy only each failing check's id and
    // type; what the checks expect and what the client reported are for administrators only.
    expect(refused.json.error.cause.message).toBe(
      `Failed to pass posture checks for service policies: [${dialPolicy}]`,
    );
    expect(Object.keys(refused.json.error.cause.data)).toEqual([dialPolicy]);
    const shown = refused.json.error.cause.data[dialPolicy] as { id: string }[];
    expect([...shown].sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [
        { id: osCheck, typeId: 'OS', isPassing: false },
        { id: macCheck, typeId: 'MAC', isPassing: false },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect(refused.text).not.toMatch(/aabbccddeeff|>=5\.0\.0|expectedValue|actualValue|postureCheckName/i);
    const failed = await admin({ path: `/identities/${u.id}/failed-service-requests` });
    expect(failed.status).toBe(200);
    expect(failed.json.data).toHaveLength(1);
    expect(failed.json.data[0]).toMatchObject({
      apiSessionId: await apiSessionOf(u),
      serviceId: guarded,
      sessionType: 'Dial',
      policyFailures: [{ policyId: dialPolicy }],
    });
    const checks = failed.json.data[0].policyFailures[0].checks.map(
      (c: { postureCheckId: string }) => c.postureCheckId,
    );
    expect(checks.sort()).toEqual([osCheck, macCheck].sort());

    const os = await as(u)({
      method: 'POST',
      path: '/posture-response',
      body: { id: osCheck, typeId: 'OS', type: 'Linux', version: '5.15.0' },
    });
    expect(os.status, os.text).toBe(201);
    expect((await as(u)({ method: 'POST', path: '/sessions', body: { serviceId: guarded } })).status).toBe(409);
    const mac = await as(u)({
      method: 'POST',
      path: '/posture-response',
      body: { id: macCheck, typeId: 'MAC', macAddresses: ['AA:BB:CC:DD:EE:FF'] },
    });
    expect(mac.status, mac.text).toBe(201);
    const ok = await as(u)({ method: 'POST', path: '/sessions', body: { serviceId: guarded } });
    expect(ok.status, ok.text).toBe(201);
  });

  it('an MFA check passes only for an API session that passed MFA', async () => {
    const u = await e.createUser({ roleAttributes: [attr] });
    const refused = await createSession(u, { serviceId: mfaGuarded }, 409);
    expect(refused.json.error.code).toBe('INVALID_POSTURE');
    // Enrolling and verifying MFA in this session passes MFA for it (apiSession.mfaPassed).
    expect((await as(u)({ method: 'POST', path: '/current-identity/mfa' })).status).toBe(201);
    const detail = (await as(u)({ path: '/current-identity/mfa' })).json.data;
    const secret = new URL(detail.provisioningUrl).searchParams.get('secret')!;
    const code = await generate({ secret, guardrails: createGuardrails({ MIN_SECRET_BYTES: 10 }) });
    expect((await as(u)({ method: 'POST', path: '/current-identity/mfa/verify', body: { code } })).status).toBe(200);
    await createSession(u, { serviceId: mfaGuarded }, 201);
  });
});

describe('who may call', () => {
  it('no token → 401 on every session operation; failed-service-requests is for administrators', async () => {
    for (const [api, method, path] of [
      ['client', 'GET', '/sessions'],
      ['client', 'POST', '/sessions'],
      ['client', 'GET', `/sessions/${n.session}`],
      ['client', 'DELETE', `/sessions/${n.session}`],
      ['management', 'GET', '/sessions'],
      ['management', 'GET', `/sessions/${n.session}`],
      ['management', 'DELETE', `/sessions/${n.session}`],
      ['management', 'GET', `/sessions/${n.session}/route-path`],
      ['management', 'GET', `/identities/${user.id}/failed-service-requests`],
    ] as const) {
      const res = await e.call(api, { method, path, ...(method === 'POST' ? { body: { serviceId: n.s1 } } : {}) });
      expect(res.status, `${api} ${method} ${path}`).toBe(401);
      expect(res.json.error.code).toBe('UNAUTHORIZED');
    }
    const nonAdmin = await e.call('management', {
      path: `/identities/${user.id}/failed-service-requests`,
      token: user.token,
    });
    expect(nonAdmin.status).toBe(401);
    const ok = await admin({ path: `/identities/${user.id}/failed-service-requests` });
    expect(ok.status).toBe(200);
    expect(ok.json.data).toEqual([]);
    expect((await admin({ path: '/identities/nope/failed-service-requests' })).status).toBe(404);
  });
});
