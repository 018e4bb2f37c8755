import { X509Certificate, createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, authPolicyBody, startE2e } from '../support/e2e.ts';
import { uniqueName } from '../support/infra.ts';

/**
 * Auth policies (CRUD, references, deletion rules) and what they govern over the gateway: updb
 * allowed or refused, the lockout after maxAttempts, the password rules on every password set;
 * the current identity's authenticators; identity tracing; /controllers. Caller matrix throughout.
 */
let e: E2e;
let admin: string;
let user: Awaited<ReturnType<E2e['createUser']>>;

beforeAll(async () => {
  e = await startE2e();
  admin = e.adminToken;
  user = await e.createUser();
});
afterAll(async () => {
  await e?.stop();
});

const mgmt = (token: string | undefined, path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, ...(token ? { token } : {}), ...init });

const policyBody = authPolicyBody;

async function createPolicy(body = policyBody()): Promise<string> {
  const res = await mgmt(admin, '/auth-policies', { method: 'POST', body });
  if (res.status !== 201) throw new Error(`policy create failed: ${res.status} ${res.text}`);
  return res.json.data.id as string;
}

/** An identity under a policy with a updb authenticator (not logged in). */
async function userUnder(policyId: string, password = 'Secret-Pass-1') {
  const id = await e.createIdentity({ authPolicyId: policyId });
  const username = uniqueName('u');
  const res = await mgmt(admin, '/authenticators', {
    method: 'POST',
    body: { method: 'updb', identityId: id, username, password },
  });
  if (res.status !== 201) throw new Error(`authenticator create failed: ${res.status} ${res.text}`);
  return { id, username, password, authenticatorId: res.json.data.id as string };
}

const passwordLogin = (username: string, password: string) =>
  e.call('client', { method: 'POST', path: '/authenticate?method=password', body: { username, password } });

describe('auth policies', () => {
  it('concurrent PATCHes of different fields of a policy, or of an authenticator, both survive', async () => {
    for (let i = 0; i < 5; i++) {
      const id = await createPolicy();
      const name = uniqueName(`locked-${i}`);
      const [a, b] = await Promise.all([
        mgmt(admin, `/auth-policies/${id}`, { method: 'PATCH', body: { name } }),
        mgmt(admin, `/auth-policies/${id}`, { method: 'PATCH', body: { tags: { round: String(i) } } }),
      ]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect((await mgmt(admin, `/auth-policies/${id}`)).json.data).toMatchObject({ name, tags: { round: String(i) } });

      const user = await userUnder('default');
      const username = uniqueName(`renamed-${i}`);
      const [c, d] = await Promise.all([
        mgmt(admin, `/authenticators/${user.authenticatorId}`, { method: 'PATCH', body: { username } }),
        mgmt(admin, `/authenticators/${user.authenticatorId}`, {
          method: 'PATCH',
          body: { tags: { round: String(i) } },
        }),
      ]);
      expect([c.status, d.status]).toEqual([200, 200]);
      expect((await mgmt(admin, `/authenticators/${user.authenticatorId}`)).json.data).toMatchObject({
        username,
        tags: { round: String(i) },
      });
    }
  });

  it('the default policy is there as the reference migrates it, and lists filter on the dotted fields', async () => {
    const res = await mgmt(admin, '/auth-policies/default');
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({
      id: 'default',
      name: 'Default',
      _links: { self: { href: './auth-policies/default' } },
      primary: {
        cert: { allowed: true, allowExpiredCerts: true },
        updb: {
          allowed: true,
          minPasswordLength: 5,
          requireSpecialChar: false,
          requireNumberChar: false,
          requireMixedCase: false,
          maxAttempts: 0,
          lockoutDurationMinutes: 0,
        },
        extJwt: { allowed: true, allowedSigners: [] },
      },
    });
    // no required signer: the reference leaves `requireExtJwtSigner` out
    expect(res.json.data.secondary).toEqual({ requireTotp: false });
    // The CLI resolves names to ids with filters (ZITI-FACTS §14.1).
    const byId = await mgmt(admin, `/auth-policies?filter=${encodeURIComponent('id="default"')}`);
    expect(byId.json.data.map((p: { id: string }) => p.id)).toEqual(['default']);
    expect(byId.json.meta.pagination).toMatchObject({ limit: 10, offset: 0, totalCount: 1 });
    const totp = await createPolicy(policyBody({ secondary: { requireTotp: true } }));
    const filtered = await mgmt(admin, `/auth-policies?filter=${encodeURIComponent('secondary.requireTotp = true')}`);
    expect(filtered.json.data.map((p: { id: string }) => p.id)).toContain(totp);
    expect(filtered.json.data.map((p: { id: string }) => p.id)).not.toContain('default');
    const bad = await mgmt(admin, `/auth-policies?filter=${encodeURIComponent('primary.nope = 1')}`);
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('INVALID_FILTER');
  });

  it('create, detail, replace, patch, delete', async () => {
    const name = uniqueName('policy');
    const id = await createPolicy(policyBody({ name, updb: { minPasswordLength: 2, maxAttempts: -1 } }));
    const detail = await mgmt(admin, `/auth-policies/${id}`);
    // Stored normalisation: minPasswordLength < 5 → 5, negative counts → 0.
    expect(detail.json.data.primary.updb).toMatchObject({ minPasswordLength: 5, maxAttempts: 0 });
    expect(detail.json.data.name).toBe(name);

    const put = await mgmt(admin, `/auth-policies/${id}`, {
      method: 'PUT',
      body: policyBody({ name: `${name}-2`, cert: { allowed: false }, secondary: { requireTotp: true } }),
    });
    expect(put.status).toBe(200);
    expect(put.json).toEqual({ data: {}, meta: {} });
    expect((await mgmt(admin, `/auth-policies/${id}`)).json.data).toMatchObject({
      name: `${name}-2`,
      primary: { cert: { allowed: false } },
      secondary: { requireTotp: true },
    });

    const patch = await mgmt(admin, `/auth-policies/${id}`, {
      method: 'PATCH',
      body: { primary: { updb: { maxAttempts: 4 } }, tags: { team: 'blue' } },
    });
    expect(patch.status).toBe(200);
    const after = (await mgmt(admin, `/auth-policies/${id}`)).json.data;
    expect(after).toMatchObject({
      name: `${name}-2`,
      tags: { team: 'blue' },
      primary: { cert: { allowed: false }, updb: { maxAttempts: 4, minPasswordLength: 5 } },
      secondary: { requireTotp: true },
    });

    expect((await mgmt(admin, `/auth-policies/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await mgmt(admin, `/auth-policies/${id}`)).status).toBe(404);
  });

  it('bad input: missing sections, wrong types, duplicate names, unknown signers', async () => {
    const missing = await mgmt(admin, '/auth-policies', {
      method: 'POST',
      body: { name: uniqueName('p'), primary: policyBody().primary },
    });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'secondary' } });
    const wrongType = await mgmt(admin, '/auth-policies', {
      method: 'POST',
      body: {
        ...policyBody(),
        primary: { ...policyBody().primary, updb: { ...policyBody().primary.updb, maxAttempts: 'three' } },
      },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.json.error.cause.field).toContain('maxAttempts');
    const name = uniqueName('dup');
    await createPolicy(policyBody({ name }));
    const dup = await mgmt(admin, '/auth-policies', { method: 'POST', body: policyBody({ name }) });
    expect(dup.status).toBe(400);
    expect(dup.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name' } });
    const ghost = await mgmt(admin, '/auth-policies', {
      method: 'POST',
      body: policyBody({ extJwt: { allowedSigners: ['no-such-signer'] } }),
    });
    expect(ghost.status).toBe(404);
    expect(ghost.json.error).toMatchObject({
      code: 'NOT_FOUND',
      cause: { field: 'primary.extJwt.allowedExtJwtSigners[0]', value: 'no-such-signer' },
    });
    const ghost2 = await mgmt(admin, '/auth-policies', {
      method: 'POST',
      body: policyBody({ secondary: { requireExtJwtSigner: 'no-such-signer' } }),
    });
    expect(ghost2.status).toBe(404);
    expect(ghost2.json.error.cause.field).toBe('secondary.requiredExtJwtSigner');
    expect((await mgmt(admin, '/auth-policies/nope', { method: 'PATCH', body: { name: 'x' } })).status).toBe(404);
  });

  it('a policy identities use can not be deleted (409), default included; an identity may not point at a missing one', async () => {
    const inUse = await mgmt(admin, '/auth-policies/default', { method: 'DELETE' });
    expect(inUse.status).toBe(409);
    expect(inUse.json.error).toMatchObject({
      code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
      cause: { field: 'authPolicyId' },
    });
    const id = await createPolicy();
    const identity = await e.createIdentity({ authPolicyId: id });
    const blocked = await mgmt(admin, `/auth-policies/${id}`, { method: 'DELETE' });
    expect(blocked.status).toBe(409);
    expect(blocked.json.error.cause.value).toBe(`[${identity}]`);
    expect(
      (await mgmt(admin, `/identities/${identity}`, { method: 'PATCH', body: { authPolicyId: 'default' } })).status,
    ).toBe(200);
    expect((await mgmt(admin, `/auth-policies/${id}`, { method: 'DELETE' })).status).toBe(200);
  });

  it('caller matrix: admin only', async () => {
    const id = await createPolicy();
    const calls = [
      { method: 'GET', path: '/auth-policies' },
      { method: 'POST', path: '/auth-policies', body: policyBody() },
      { method: 'GET', path: `/auth-policies/${id}` },
      { method: 'PUT', path: `/auth-policies/${id}`, body: policyBody() },
      { method: 'PATCH', path: `/auth-policies/${id}`, body: { name: uniqueName('p') } },
      { method: 'DELETE', path: `/auth-policies/${id}` },
    ];
    for (const c of calls) {
      for (const token of [undefined, user.token]) {
        const res = await mgmt(token, c.path, c);
        expect(res.status, `${c.method} ${c.path}`).toBe(401);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
      }
    }
    expect((await mgmt(admin, `/auth-policies/${id}`)).status).toBe(200);
  });
});

describe('what auth policies govern', () => {
  it('updb.allowed=false refuses password logins; switching the identity back allows them', async () => {
    const policy = await createPolicy(policyBody({ updb: { allowed: false } }));
    const u = await userUnder(policy);
    const refused = await passwordLogin(u.username, u.password);
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('INVALID_AUTH');
    await mgmt(admin, `/identities/${u.id}`, { method: 'PATCH', body: { authPolicyId: 'default' } });
    expect((await passwordLogin(u.username, u.password)).status).toBe(200);
  });

  it('maxAttempts wrong passwords disable the identity for lockoutDurationMinutes and end its sessions', async () => {
    const policy = await createPolicy(policyBody({ updb: { maxAttempts: 2, lockoutDurationMinutes: 15 } }));
    const u = await userUnder(policy);
    const token = (await passwordLogin(u.username, u.password)).json.data.token as string;
    expect((await passwordLogin(u.username, 'wrong-one')).status).toBe(401);
    expect((await mgmt(admin, `/identities/${u.id}`)).json.data.disabled).toBe(false);
    expect((await passwordLogin(u.username, 'wrong-two')).status).toBe(401);
    const detail = (await mgmt(admin, `/identities/${u.id}`)).json.data;
    expect(detail.disabled).toBe(true);
    expect(Date.parse(detail.disabledUntil) - Date.parse(detail.disabledAt)).toBe(15 * 60_000);
    expect((await e.call('client', { path: '/current-api-session', token })).status).toBe(401);
    const locked = await passwordLogin(u.username, u.password);
    expect(locked.status).toBe(401);
    expect(locked.json.error.code).toBe('INVALID_AUTH');
    expect((await mgmt(admin, `/identities/${u.id}/enable`, { method: 'POST' })).status).toBe(200);
    expect((await passwordLogin(u.username, u.password)).status).toBe(200);
  });

  it('a successful login clears the failures counted before it: maxAttempts counts consecutive ones', async () => {
    const policy = await createPolicy(policyBody({ updb: { maxAttempts: 2, lockoutDurationMinutes: 15 } }));
    const u = await userUnder(policy);
    expect((await passwordLogin(u.username, 'wrong-one')).status).toBe(401);
    expect((await passwordLogin(u.username, u.password)).status).toBe(200);
    expect((await passwordLogin(u.username, 'wrong-two')).status).toBe(401);
    expect((await mgmt(admin, `/identities/${u.id}`)).json.data.disabled).toBe(false);
    expect((await passwordLogin(u.username, 'wrong-three')).status).toBe(401);
    expect((await mgmt(admin, `/identities/${u.id}`)).json.data.disabled).toBe(true);
  });

  it('passwords set through the API must meet the policy (beyond the reference, which only stores the rules)', async () => {
    const policy = await createPolicy(
      policyBody({
        updb: { minPasswordLength: 12, requireMixedCase: true, requireNumberChar: true, requireSpecialChar: true },
      }),
    );
    const id = await e.createIdentity({ authPolicyId: policy });
    for (const [password, reason] of [
      ['Short-1', 'at least 12'],
      ['no-upper-case-1', 'upper and lower'],
      ['No-Digits-Here', 'number'],
      ['NoSpecials12345', 'special'],
    ] as const) {
      const res = await mgmt(admin, '/authenticators', {
        method: 'POST',
        body: { method: 'updb', identityId: id, username: uniqueName('u'), password },
      });
      expect(res.status, password).toBe(400);
      expect(res.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'password' } });
      expect(res.json.error.cause.reason).toContain(reason);
      expect(res.text).not.toContain(password);
    }
    const ok = await mgmt(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'updb', identityId: id, username: uniqueName('u'), password: 'Long-Enough-Pass-1' },
    });
    expect(ok.status).toBe(201);
    const weak = await mgmt(admin, `/authenticators/${ok.json.data.id}`, {
      method: 'PATCH',
      body: { password: 'weakpassword' },
    });
    expect(weak.status).toBe(400);
  });
});

describe('the current identity’s authenticators', () => {
  for (const api of ['client', 'management'] as const) {
    it(`${api}: lists and reads only the caller's authenticators`, async () => {
      const me = await e.createUser();
      const list = await e.call(api, { path: '/current-identity/authenticators', token: me.token });
      expect(list.status).toBe(200);
      expect(list.json.data).toHaveLength(1);
      expect(list.json.data[0]).toMatchObject({
        id: me.authenticatorId,
        method: 'updb',
        username: me.username,
        identityId: me.id,
      });
      expect(list.json.meta.pagination.totalCount).toBe(1);
      const filtered = await e.call(api, {
        path: `/current-identity/authenticators?filter=${encodeURIComponent('method="cert"')}`,
        token: me.token,
      });
      expect(filtered.json.data).toEqual([]);
      const detail = await e.call(api, {
        path: `/current-identity/authenticators/${me.authenticatorId}`,
        token: me.token,
      });
      expect(detail.json.data).toMatchObject({
        id: me.authenticatorId,
        _links: { self: { href: `./authenticators/${me.authenticatorId}` } },
      });
      const others = await e.call(api, {
        path: `/current-identity/authenticators/${user.authenticatorId}`,
        token: me.token,
      });
      expect(others.status).toBe(404);
      expect(others.json.error.code).toBe('NOT_FOUND');
    });
  }

  it('replace and patch need the current password: wrong → 401 with the field in the cause', async () => {
    const me = await e.createUser();
    const wrong = await e.call('client', {
      method: 'PATCH',
      path: `/current-identity/authenticators/${me.authenticatorId}`,
      token: me.token,
      body: { currentPassword: 'not-my-password', password: 'New-Password-1' },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error).toMatchObject({ code: 'UNAUTHORIZED', cause: { field: 'currentPassword' } });
    const missing = await e.call('client', {
      method: 'PATCH',
      path: `/current-identity/authenticators/${me.authenticatorId}`,
      token: me.token,
      body: { password: 'New-Password-1' },
    });
    expect(missing.status).toBe(400);
    expect(missing.json.error.cause.field).toBe('currentPassword');

    const patched = await e.call('client', {
      method: 'PATCH',
      path: `/current-identity/authenticators/${me.authenticatorId}`,
      token: me.token,
      body: { currentPassword: me.password, password: 'New-Password-1' },
    });
    expect(patched.status).toBe(200);
    expect((await passwordLogin(me.username, me.password)).status).toBe(401);
    expect((await passwordLogin(me.username, 'New-Password-1')).status).toBe(200);

    const newName = uniqueName('renamed');
    const replaced = await e.call('management', {
      method: 'PUT',
      path: `/current-identity/authenticators/${me.authenticatorId}`,
      token: me.token,
      body: {
        currentPassword: 'New-Password-1',
        username: newName,
        password: 'Third-Password-3',
        tags: { mine: 'yes' },
      },
    });
    expect(replaced.status).toBe(200);
    const login = await passwordLogin(newName, 'Third-Password-3');
    expect(login.status).toBe(200);
    const detail = await e.call('client', {
      path: `/current-identity/authenticators/${me.authenticatorId}`,
      token: login.json.data.token,
    });
    expect(detail.json.data).toMatchObject({ username: newName, tags: { mine: 'yes' } });
    const incomplete = await e.call('client', {
      method: 'PUT',
      path: `/current-identity/authenticators/${me.authenticatorId}`,
      token: login.json.data.token,
      body: { currentPassword: 'Third-Password-3', password: 'x-Fourth-4' },
    });
    expect(incomplete.status).toBe(400);
    expect(incomplete.json.error.cause.field).toBe('username');
  });

  it('caller matrix: any session, never anonymous', async () => {
    for (const api of ['client', 'management'] as const) {
      for (const c of [
        { method: 'GET', path: '/current-identity/authenticators' },
        { method: 'GET', path: `/current-identity/authenticators/${user.authenticatorId}` },
        {
          method: 'PUT',
          path: `/current-identity/authenticators/${user.authenticatorId}`,
          body: { currentPassword: 'x-x-x', username: 'abcd', password: 'abcde' },
        },
        {
          method: 'PATCH',
          path: `/current-identity/authenticators/${user.authenticatorId}`,
          body: { currentPassword: 'x-x-x' },
        },
      ]) {
        const res = await e.call(api, c);
        expect(res.status, `${api} ${c.method} ${c.path}`).toBe(401);
      }
    }
    const adminList = await e.call('management', { path: '/current-identity/authenticators', token: admin });
    expect(adminList.status).toBe(200);
    expect(adminList.json.data[0].username).toBe('admin');
  });
});

describe('identity tracing and controllers', () => {
  it('PUT /identities/{id}/trace stores the trace and answers it', async () => {
    const id = await e.createIdentity();
    const on = await mgmt(admin, `/identities/${id}/trace`, {
      method: 'PUT',
      body: { enabled: true, duration: '90m', traceId: 'trace-1', channels: ['edge'] },
    });
    expect(on.status).toBe(200);
    expect(on.json.data).toMatchObject({ enabled: true, traceId: 'trace-1' });
    expect(Date.parse(on.json.data.until) - Date.now()).toBeGreaterThan(85 * 60_000);
    const generated = await mgmt(admin, `/identities/${id}/trace`, { method: 'PUT', body: { enabled: true } });
    expect(generated.json.data.traceId).toMatch(/^[0-9A-Za-z.-]+$/);
    const off = await mgmt(admin, `/identities/${id}/trace`, { method: 'PUT', body: { enabled: false } });
    expect(off.json.data).toEqual({ enabled: false });
    const bad = await mgmt(admin, `/identities/${id}/trace`, {
      method: 'PUT',
      body: { enabled: true, duration: 'a while' },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.cause.field).toBe('duration');
    expect((await mgmt(admin, '/identities/nope/trace', { method: 'PUT', body: { enabled: true } })).status).toBe(404);
    for (const token of [undefined, user.token])
      expect((await mgmt(token, `/identities/${id}/trace`, { method: 'PUT', body: { enabled: true } })).status).toBe(
        401,
      );
  });

  it('/controllers lists this controller, identified by the certificate the gateway presents', async () => {
    for (const api of ['client', 'management'] as const) {
      expect((await e.call(api, { path: '/controllers' })).status).toBe(401);
      const res = await e.call(api, { path: '/controllers', token: user.token });
      expect(res.status).toBe(200);
      expect(res.json.data).toHaveLength(1);
      const c = res.json.data[0];
      const port = e.cluster.port;
      expect(c).toMatchObject({
        name: 'localhost',
        isOnline: true,
        apiAddresses: {
          'edge-client': [{ url: `https://localhost:${port}/edge/client/v1`, version: 'v1' }],
          'edge-management': [{ url: `https://localhost:${port}/edge/management/v1`, version: 'v1' }],
        },
      });
      const cert = new X509Certificate(c.certPem);
      expect(createHash('sha1').update(cert.raw).digest('hex')).toBe(c.fingerprint);
      expect(cert.checkIssued(new X509Certificate(e.caPems[0]!))).toBe(true);
      expect(res.json.meta.pagination).toMatchObject({ totalCount: 1 });
      const none = await e.call(api, {
        path: `/controllers?filter=${encodeURIComponent('isOnline = false')}`,
        token: user.token,
      });
      expect(none.json.data).toEqual([]);
    }
  });
});
