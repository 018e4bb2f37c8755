import { createGuardrails, generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, authPolicyBody, startE2e } from '../support/e2e.ts';
import { uniqueName } from '../support/infra.ts';

/**
 * MFA end to end (ZITI-FACTS §9): enrollment, verification, QR code, recovery codes, removal,
 * `POST /authenticate/mfa` with TOTP or a single-use recovery code, the partially authenticated
 * session (§9.3), `secondary.requireTotp`, and the administrator's `DELETE /identities/{id}/mfa`.
 */
let e: E2e;
let admin: string;

beforeAll(async () => {
  e = await startE2e();
  admin = e.adminToken;
});
afterAll(async () => {
  await e?.stop();
});

const guardrails = createGuardrails({ MIN_SECRET_BYTES: 10 });
const totp = (secret: string) => generate({ secret, guardrails });
const mfaQuery = {
  typeId: 'MFA',
  provider: 'ziti',
  httpMethod: 'POST',
  httpUrl: './authenticate/mfa',
  format: 'alphaNumeric',
  minLength: 4,
  maxLength: 6,
};

type User = Awaited<ReturnType<E2e['createUser']>>;

const call = (
  api: 'client' | 'management',
  token: string | undefined,
  path: string,
  init: Record<string, unknown> = {},
) => e.call(api, { path, ...(token ? { token } : {}), ...init });

/** Enrolls the user's MFA and verifies it; returns the secret and the recovery codes. */
async function enrollAndVerify(u: User): Promise<{ secret: string; recoveryCodes: string[] }> {
  expect((await call('client', u.token, '/current-identity/mfa', { method: 'POST' })).status).toBe(201);
  const detail = (await call('client', u.token, '/current-identity/mfa')).json.data;
  const secret = new URL(detail.provisioningUrl).searchParams.get('secret')!;
  expect(
    (
      await call('client', u.token, '/current-identity/mfa/verify', {
        method: 'POST',
        body: { code: await totp(secret) },
      })
    ).status,
  ).toBe(200);
  return { secret, recoveryCodes: detail.recoveryCodes as string[] };
}

const passwordLogin = (u: { username: string; password: string }, api: 'client' | 'management' = 'client') =>
  e.call(api, {
    method: 'POST',
    path: '/authenticate?method=password',
    body: { username: u.username, password: u.password },
  });

describe('enrollment and verification', () => {
  it('walks the enrollment: none → enrolled (unverified) → verified, with the reference’s shapes', async () => {
    const u = await e.createUser();
    const none = await call('client', u.token, '/current-identity/mfa');
    expect(none.status).toBe(404);
    expect(none.json.error.code).toBe('NOT_FOUND');

    const created = await call('client', u.token, '/current-identity/mfa', { method: 'POST' });
    expect(created.status).toBe(201);
    expect(created.json.data._links).toEqual({ self: { href: './current-identity/mfa' } });
    const again = await call('management', u.token, '/current-identity/mfa', { method: 'POST' });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('MFA_EXISTS');

    const pending = await call('client', u.token, '/current-identity/mfa');
    expect(pending.status).toBe(200);
    const d = pending.json.data;
    expect(d).toMatchObject({ id: created.json.data.id, isVerified: false });
    const identityName = (await call('client', u.token, '/current-identity')).json.data.name;
    expect(d.provisioningUrl).toMatch(
      new RegExp(
        `^otpauth://totp/openziti\\.io:${encodeURIComponent(identityName)}\\?issuer=openziti\\.io&secret=[A-Z2-7]{16}$`,
      ),
    );
    expect(d.recoveryCodes).toHaveLength(20);
    expect(Object.keys(d._links).sort()).toEqual(['current-identity', 'qr', 'self', 'verify']);

    const qr = await e.http({
      path: '/edge/client/v1/current-identity/mfa/qr-code',
      headers: { 'zt-session': u.token },
    });
    expect(qr.status).toBe(200);
    expect(qr.headers['content-type']).toBe('image/png');
    expect(qr.raw.subarray(1, 4).toString()).toBe('PNG');
    expect([qr.raw.readUInt32BE(16), qr.raw.readUInt32BE(20)]).toEqual([256, 256]);

    const secret = new URL(d.provisioningUrl).searchParams.get('secret')!;
    const wrong = await call('client', u.token, '/current-identity/mfa/verify', {
      method: 'POST',
      body: { code: '000000' },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error.code).toBe('MFA_INVALID_TOKEN');
    const recoveryNotAccepted = await call('client', u.token, '/current-identity/mfa/verify', {
      method: 'POST',
      body: { code: d.recoveryCodes[0] },
    });
    expect(recoveryNotAccepted.json.error.code).toBe('MFA_INVALID_TOKEN');
    const noCode = await call('client', u.token, '/current-identity/mfa/verify', { method: 'POST', body: {} });
    expect(noCode.status).toBe(400);
    expect(noCode.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'code' } });
    expect(
      (
        await call('client', u.token, '/current-identity/mfa/verify', {
          method: 'POST',
          body: { code: await totp(secret) },
        })
      ).status,
    ).toBe(200);

    const verified = (await call('client', u.token, '/current-identity/mfa')).json.data;
    expect(verified.isVerified).toBe(true);
    expect(verified).not.toHaveProperty('provisioningUrl');
    expect(verified).not.toHaveProperty('recoveryCodes');
    expect(Object.keys(verified._links).sort()).toEqual(['current-identity', 'recovery-codes', 'self']);
    expect(
      (await e.http({ path: '/edge/client/v1/current-identity/mfa/qr-code', headers: { 'zt-session': u.token } }))
        .status,
    ).toBe(404);
    expect(
      (
        await call('client', u.token, '/current-identity/mfa/verify', {
          method: 'POST',
          body: { code: await totp(secret) },
        })
      ).status,
    ).toBe(404);

    // The session that verified is complete; the identity now shows MFA.
    const current = (await call('client', u.token, '/current-api-session')).json.data;
    expect(current).toMatchObject({ isMfaRequired: true, isMfaComplete: true, authQueries: [] });
    expect((await call('management', admin, `/identities/${u.id}`)).json.data.isMfaEnabled).toBe(true);
    expect((await call('client', u.token, '/current-identity')).json.data.isMfaEnabled).toBe(true);
  });

  it('an unverified enrollment does not affect login and can be removed without a code', async () => {
    const u = await e.createUser();
    await call('client', u.token, '/current-identity/mfa', { method: 'POST' });
    const login = await passwordLogin(u);
    expect(login.json.data).toMatchObject({ isMfaRequired: false, authQueries: [] });
    const notEnrolled = await call('client', login.json.data.token, '/authenticate/mfa', {
      method: 'POST',
      body: { code: '123456' },
    });
    expect(notEnrolled.status).toBe(409);
    expect(notEnrolled.json.error.code).toBe('MFA_NOT_ENROLLED');
    expect(
      (
        await call('client', u.token, '/current-identity/mfa/recovery-codes', {
          headers: { 'mfa-validation-code': '123456' },
        })
      ).status,
    ).toBe(404);
    expect((await call('client', u.token, '/current-identity/mfa', { method: 'DELETE' })).status).toBe(200);
    expect((await call('client', u.token, '/current-identity/mfa')).status).toBe(404);
    expect((await call('management', admin, `/identities/${u.id}`)).json.data.isMfaEnabled).toBe(false);
  });
});

describe('authentication with MFA', () => {
  it('a login is partial until /authenticate/mfa; only the §9.3 operations answer meanwhile', async () => {
    const u = await e.createUser({ isAdmin: true });
    const { secret } = await enrollAndVerify(u);
    const login = await passwordLogin(u, 'management');
    expect(login.status).toBe(200);
    expect(login.json.data).toMatchObject({ isMfaRequired: true, isMfaComplete: false, authQueries: [mfaQuery] });
    const token = login.json.data.token as string;

    // Allowed while partial.
    const current = await call('client', token, '/current-api-session');
    expect(current.status).toBe(200);
    expect(current.json.data.authQueries).toEqual([mfaQuery]);
    expect((await call('client', token, '/current-identity/mfa')).status).toBe(200);
    expect((await call('client', token, '/current-identity/mfa', { method: 'POST' })).status).toBe(409);
    expect(
      (await e.http({ path: '/edge/client/v1/current-identity/mfa/qr-code', headers: { 'zt-session': token } })).status,
    ).toBe(404);
    expect(
      (await call('client', token, '/current-identity/mfa/verify', { method: 'POST', body: { code: '000000' } }))
        .status,
    ).toBe(404);
    // Everything else is 401, even for an admin.
    for (const [api, method, path] of [
      ['client', 'GET', '/current-identity'],
      ['client', 'GET', '/current-identity/authenticators'],
      ['client', 'GET', '/controllers'],
      ['client', 'DELETE', '/current-identity/mfa'],
      ['client', 'GET', '/current-identity/mfa/recovery-codes'],
      ['management', 'GET', '/identities'],
      ['management', 'GET', '/auth-policies'],
    ] as const) {
      const res = await call(api, token, path, { method });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.json.error.code).toBe('UNAUTHORIZED');
    }
    // Anonymous operations still answer.
    expect((await call('client', token, '/version')).status).toBe(200);

    const wrong = await call('client', token, '/authenticate/mfa', { method: 'POST', body: { code: '000000' } });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error.code).toBe('MFA_INVALID_TOKEN');
    const ok = await call('management', token, '/authenticate/mfa', {
      method: 'POST',
      body: { code: await totp(secret) },
    });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({ data: {}, meta: {} });
    expect((await call('management', token, '/identities')).status).toBe(200);
    expect((await call('client', token, '/current-api-session')).json.data).toMatchObject({
      isMfaRequired: true,
      isMfaComplete: true,
      authQueries: [],
    });
  });

  it('a recovery code completes a login once', async () => {
    const u = await e.createUser();
    const { recoveryCodes } = await enrollAndVerify(u);
    const t1 = (await passwordLogin(u)).json.data.token;
    expect(
      (await call('client', t1, '/authenticate/mfa', { method: 'POST', body: { code: recoveryCodes[0] } })).status,
    ).toBe(200);
    expect((await call('client', t1, '/current-identity')).status).toBe(200);
    const t2 = (await passwordLogin(u)).json.data.token;
    const reused = await call('client', t2, '/authenticate/mfa', { method: 'POST', body: { code: recoveryCodes[0] } });
    expect(reused.status).toBe(400);
    expect(reused.json.error.code).toBe('MFA_INVALID_TOKEN');
    expect(
      (await call('client', t2, '/authenticate/mfa', { method: 'POST', body: { code: recoveryCodes[1] } })).status,
    ).toBe(200);
  });

  it('/authenticate/mfa needs a session (401) and an MFA (409)', async () => {
    const anonymous = await e.call('client', {
      method: 'POST',
      path: '/authenticate/mfa',
      body: { code: '123456' },
      skipValidation: true,
    });
    // The spec types this 401 as the empty envelope; the error envelope is what every 401 carries.
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error.code).toBe('UNAUTHORIZED');
    const u = await e.createUser();
    const res = await call('client', u.token, '/authenticate/mfa', { method: 'POST', body: { code: '123456' } });
    expect(res.status).toBe(409);
    expect(res.json.error.code).toBe('MFA_NOT_ENROLLED');
  });

  it('secondary.requireTotp: a login without MFA is partial until the identity enrolls and verifies in that session', async () => {
    const policy = await call('management', admin, '/auth-policies', {
      method: 'POST',
      body: authPolicyBody({ name: uniqueName('totp'), secondary: { requireTotp: true } }),
    });
    expect(policy.status).toBe(201);
    const u = await e.createUser();
    await call('management', admin, `/identities/${u.id}`, {
      method: 'PATCH',
      body: { authPolicyId: policy.json.data.id },
    });
    // The live session of the user picks the policy up at once.
    expect((await call('client', u.token, '/current-identity')).status).toBe(401);
    const login = await passwordLogin(u);
    expect(login.json.data).toMatchObject({ isMfaRequired: false, isMfaComplete: false, authQueries: [mfaQuery] });
    const token = login.json.data.token;
    expect((await call('client', token, '/current-identity')).status).toBe(401);
    expect((await call('client', token, '/current-identity/mfa', { method: 'POST' })).status).toBe(201);
    const secret = new URL(
      (await call('client', token, '/current-identity/mfa')).json.data.provisioningUrl,
    ).searchParams.get('secret')!;
    expect(
      (
        await call('client', token, '/current-identity/mfa/verify', {
          method: 'POST',
          body: { code: await totp(secret) },
        })
      ).status,
    ).toBe(200);
    expect((await call('client', token, '/current-identity')).status).toBe(200);
    expect((await call('client', token, '/current-api-session')).json.data).toMatchObject({
      isMfaRequired: true,
      isMfaComplete: true,
      authQueries: [],
    });
  });
});

describe('recovery codes and removal', () => {
  it('shows recovery codes against a TOTP code (header or body), regenerates them against TOTP or a recovery code', async () => {
    const u = await e.createUser();
    const { secret, recoveryCodes } = await enrollAndVerify(u);
    const viaHeader = await call('client', u.token, '/current-identity/mfa/recovery-codes', {
      headers: { 'mfa-validation-code': await totp(secret) },
    });
    expect(viaHeader.status).toBe(200);
    expect(viaHeader.json.data.recoveryCodes).toEqual(recoveryCodes);
    const viaBody = await call('management', u.token, '/current-identity/mfa/recovery-codes', {
      body: { code: await totp(secret) },
    });
    expect(viaBody.status).toBe(200);
    expect(viaBody.json.data.recoveryCodes).toEqual(recoveryCodes);
    // The console's `{}` on a GET is no body: the header still counts.
    const emptyBody = await call('client', u.token, '/current-identity/mfa/recovery-codes', {
      body: {},
      headers: { 'mfa-validation-code': await totp(secret) },
    });
    expect(emptyBody.status).toBe(200);
    for (const headers of [{}, { 'mfa-validation-code': recoveryCodes[0]! }, { 'mfa-validation-code': '000000' }]) {
      const res = await call('client', u.token, '/current-identity/mfa/recovery-codes', { headers });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('MFA_INVALID_TOKEN');
    }
    expect(
      (
        await call('client', u.token, '/current-identity/mfa/recovery-codes', {
          method: 'POST',
          body: { code: 'WRONG1' },
        })
      ).status,
    ).toBe(400);
    const regenerated = await call('client', u.token, '/current-identity/mfa/recovery-codes', {
      method: 'POST',
      body: { code: recoveryCodes[2] },
    });
    expect(regenerated.status).toBe(200);
    expect(regenerated.json).toEqual({ data: {}, meta: {} });
    const fresh = (
      await call('client', u.token, '/current-identity/mfa/recovery-codes', {
        headers: { 'mfa-validation-code': await totp(secret) },
      })
    ).json.data.recoveryCodes;
    expect(fresh).toHaveLength(20);
    expect(fresh).not.toEqual(recoveryCodes);
    const t = (await passwordLogin(u)).json.data.token;
    expect(
      (await call('client', t, '/authenticate/mfa', { method: 'POST', body: { code: recoveryCodes[3] } })).status,
    ).toBe(400);
    expect((await call('client', t, '/authenticate/mfa', { method: 'POST', body: { code: fresh[0] } })).status).toBe(
      200,
    );
  });

  it('DELETE /current-identity/mfa needs the mfa-validation-code header once verified', async () => {
    const u = await e.createUser();
    const { secret } = await enrollAndVerify(u);
    const missing = await call('client', u.token, '/current-identity/mfa', { method: 'DELETE' });
    expect(missing.status).toBe(400);
    expect(missing.json.error.code).toBe('MFA_INVALID_TOKEN');
    expect(
      (
        await call('client', u.token, '/current-identity/mfa', {
          method: 'DELETE',
          headers: { 'mfa-validation-code': '000000' },
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await call('client', u.token, '/current-identity/mfa', {
          method: 'DELETE',
          headers: { 'mfa-validation-code': await totp(secret) },
        })
      ).status,
    ).toBe(200);
    expect((await call('client', u.token, '/current-identity/mfa')).status).toBe(404);
    expect((await call('client', u.token, '/current-identity/mfa', { method: 'DELETE' })).status).toBe(404);
    expect((await passwordLogin(u)).json.data.authQueries).toEqual([]);
  });

  it('an administrator removes an identity’s MFA; a session still waiting for it keeps waiting, as in the reference', async () => {
    const u = await e.createUser();
    const { secret } = await enrollAndVerify(u);
    const partial = (await passwordLogin(u)).json.data.token;
    expect((await call('client', partial, '/current-identity')).status).toBe(401);
    for (const token of [undefined, u.token]) {
      const res = await call('management', token, `/identities/${u.id}/mfa`, { method: 'DELETE' });
      expect(res.status).toBe(401);
    }
    const removed = await call('management', admin, `/identities/${u.id}/mfa`, { method: 'DELETE' });
    expect(removed.status).toBe(200);
    expect(removed.json).toEqual({ data: {}, meta: {} });
    expect((await call('management', admin, `/identities/${u.id}`)).json.data.isMfaEnabled).toBe(false);
    // No second factor for free: still partial, with nothing left to complete it.
    expect((await call('client', partial, '/current-identity')).status).toBe(401);
    expect((await call('client', partial, '/services')).status).toBe(401);
    expect((await call('client', partial, '/current-api-session')).json.data).toMatchObject({
      isMfaRequired: true,
      isMfaComplete: false,
      authQueries: [mfaQuery],
    });
    const stuck = await call('client', partial, '/authenticate/mfa', {
      method: 'POST',
      body: { code: await totp(secret) },
    });
    expect(stuck.json.error.code).toBe('MFA_NOT_ENROLLED');
    expect((await call('client', partial, '/current-api-session', { method: 'DELETE' })).status).toBe(200);
    expect((await call('client', partial, '/current-api-session')).status).toBe(401);
    // The session that completed MFA keeps working, and a new login needs no second factor.
    expect((await call('client', u.token, '/current-identity/mfa')).status).toBe(404);
    expect((await call('client', u.token, '/current-api-session')).json.data).toMatchObject({
      isMfaRequired: true,
      isMfaComplete: true,
      authQueries: [],
    });
    const fresh = (await passwordLogin(u)).json.data;
    expect(fresh).toMatchObject({ isMfaRequired: false, authQueries: [] });
    expect((await call('client', fresh.token, '/current-identity')).status).toBe(200);
    expect((await call('management', admin, '/identities/no-such-identity/mfa', { method: 'DELETE' })).status).toBe(
      404,
    );
  });

  it('caller matrix: every MFA operation needs a session', async () => {
    for (const api of ['client', 'management'] as const) {
      for (const [method, path, body] of [
        ['GET', '/current-identity/mfa', undefined],
        ['POST', '/current-identity/mfa', undefined],
        ['DELETE', '/current-identity/mfa', undefined],
        ['GET', '/current-identity/mfa/qr-code', undefined],
        ['GET', '/current-identity/mfa/recovery-codes', undefined],
        ['POST', '/current-identity/mfa/recovery-codes', { code: '123456' }],
        ['POST', '/current-identity/mfa/verify', { code: '123456' }],
      ] as const) {
        const res = await e.http({ method, path: `/edge/${api}/v1${path}`, ...(body ? { body } : {}) });
        expect(res.status, `${api} ${method} ${path}`).toBe(401);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
      }
    }
  });
});
