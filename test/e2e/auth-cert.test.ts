import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestPki, issueClientCertificate, newTestPki } from '../../services/auth/test/authentication/jwt-kit.ts';
import { type E2e, authPolicyBody, startE2e } from '../support/e2e.ts';
import { uniqueName } from '../support/infra.ts';

/**
 * `method=cert` against controller-issued certificates. The controller runs on an operator-supplied
 * signer (ZITI_PKI_SIGNER_CERT_FILE/KEY_FILE) made here, so the test can issue certificates as the
 * controller would, including ones that have already expired, and check what the auth policy
 * (`cert.allowed`, `allowExpiredCerts`) makes of them.
 */
let e: E2e;
let admin: string;
let pki: TestPki;
let stranger: TestPki;
let dir: string;

beforeAll(async () => {
  pki = await newTestPki('Operator Signer');
  stranger = await newTestPki('Stranger');
  dir = mkdtempSync(join(tmpdir(), 'auth-cert-'));
  writeFileSync(join(dir, 'signer.pem'), pki.chainPem);
  writeFileSync(join(dir, 'signer.key'), pki.keyPem, { mode: 0o600 });
  e = await startE2e({
    env: { ZITI_PKI_SIGNER_CERT_FILE: join(dir, 'signer.pem'), ZITI_PKI_SIGNER_KEY_FILE: join(dir, 'signer.key') },
  });
  admin = e.adminToken;
});
afterAll(async () => {
  await e?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const mgmt = (path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, token: admin, ...init });
const certLogin = (cert: { certPem: string; keyPem: string } | undefined, api: 'client' | 'management' = 'client') =>
  e.call(api, {
    method: 'POST',
    path: '/authenticate?method=cert',
    body: {},
    ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
  });

const policyBody = (cert: { allowed: boolean; allowExpiredCerts: boolean }) =>
  authPolicyBody({ cert, name: uniqueName('cert-policy') });

/** An identity with a cert authenticator for `certPem`, optionally under a new policy. */
async function certIdentity(certPem: string, cert?: { allowed: boolean; allowExpiredCerts: boolean }) {
  let authPolicyId: string | undefined;
  if (cert) {
    const p = await mgmt('/auth-policies', { method: 'POST', body: policyBody(cert) });
    authPolicyId = p.json.data.id;
  }
  const id = await e.createIdentity(authPolicyId ? { authPolicyId } : {});
  const a = await mgmt('/authenticators', { method: 'POST', body: { method: 'cert', identityId: id, certPem } });
  if (a.status !== 201) throw new Error(`cert authenticator failed: ${a.status} ${a.text}`);
  return { id, authenticatorId: a.json.data.id as string, authPolicyId };
}

describe('method=cert with controller-issued certificates', () => {
  it('the controller serves the operator signer, and a certificate it issued logs in on both APIs', async () => {
    expect(e.caPems.map((p) => p.trim())).toEqual(pki.bundle.map((p) => p.trim()));
    const cert = await issueClientCertificate(pki, 'device-1');
    const who = await certIdentity(cert.certPem);
    for (const api of ['client', 'management'] as const) {
      const res = await certLogin(cert, api);
      expect(res.status).toBe(200);
      expect(res.json.data).toMatchObject({
        identityId: who.id,
        authenticatorId: who.authenticatorId,
        authQueries: [],
        isMfaRequired: false,
      });
      expect((await e.call('client', { path: '/current-identity', token: res.json.data.token })).json.data.id).toBe(
        who.id,
      );
    }
    // The body may carry the SDK's information, as the Go SDK sends it.
    const withInfo = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=cert',
      body: {
        sdkInfo: { type: 'ziti-sdk-golang', version: 'v0.23.40' },
        envInfo: { os: 'linux', arch: 'amd64' },
        configTypes: ['all'],
      },
      cert: cert.certPem,
      key: cert.keyPem,
    });
    expect(withInfo.status).toBe(200);
    expect((await mgmt(`/identities/${who.id}`)).json.data.sdkInfo).toMatchObject({ type: 'ziti-sdk-golang' });
  });

  it('an expired certificate logs in under allowExpiredCerts (the default policy) and not without it', async () => {
    const expired = await issueClientCertificate(pki, 'old-device', {
      now: new Date(Date.now() - 40 * 86_400_000),
      validityDays: 10,
    });
    await certIdentity(expired.certPem);
    expect((await certLogin(expired)).status).toBe(200);
    const expired2 = await issueClientCertificate(pki, 'old-device-2', {
      now: new Date(Date.now() - 40 * 86_400_000),
      validityDays: 10,
    });
    const strict = await certIdentity(expired2.certPem, { allowed: true, allowExpiredCerts: false });
    const refused = await certLogin(expired2);
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('INVALID_AUTH');
    // The same identity with a current certificate is fine under that policy.
    const fresh = await issueClientCertificate(pki, 'old-device-2-renewed');
    const other = await certIdentity(fresh.certPem);
    await mgmt(`/identities/${other.id}`, { method: 'PATCH', body: { authPolicyId: strict.authPolicyId } });
    expect((await certLogin(fresh)).status).toBe(200);
  });

  it('cert.allowed=false refuses certificate logins', async () => {
    const cert = await issueClientCertificate(pki, 'no-certs');
    const who = await certIdentity(cert.certPem, { allowed: false, allowExpiredCerts: true });
    expect((await certLogin(cert)).status).toBe(401);
    await mgmt(`/identities/${who.id}`, { method: 'PATCH', body: { authPolicyId: 'default' } });
    expect((await certLogin(cert)).status).toBe(200);
  });

  it('refuses: no certificate, a controller certificate nobody holds, a certificate the controller did not issue, a disabled identity', async () => {
    const none = await certLogin(undefined);
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('INVALID_AUTH');
    expect((await certLogin(await issueClientCertificate(pki, 'unknown-device'))).status).toBe(401);
    // A certificate of an unknown (unregistered) CA is refused as an authenticator, and does not log in.
    const foreign = await issueClientCertificate(stranger, 'foreign-device');
    const refused = await mgmt('/authenticators', {
      method: 'POST',
      body: { method: 'cert', identityId: await e.createIdentity(), certPem: foreign.certPem },
    });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'certPem' } });
    expect((await certLogin(foreign)).status).toBe(401);
    const cert = await issueClientCertificate(pki, 'to-disable');
    const who = await certIdentity(cert.certPem);
    await mgmt(`/identities/${who.id}/disable`, { method: 'POST', body: { durationMinutes: 5 } });
    expect((await certLogin(cert)).status).toBe(401);
    await mgmt(`/identities/${who.id}/enable`, { method: 'POST' });
    expect((await certLogin(cert)).status).toBe(200);
  });

  it('a certificate of a registered but unverified CA is refused', async () => {
    const ca = await mgmt('/cas', {
      method: 'POST',
      body: {
        name: uniqueName('ca'),
        certPem: stranger.bundle[0],
        isAutoCaEnrollmentEnabled: false,
        isOttCaEnrollmentEnabled: false,
        isAuthEnabled: true,
        identityRoles: [],
        externalIdClaim: {
          location: 'COMMON_NAME',
          matcher: 'ALL',
          matcherCriteria: '',
          parser: 'NONE',
          parserCriteria: '',
          index: 0,
        },
      },
    });
    expect(ca.status).toBe(201);
    const externalId = uniqueName('cn');
    await e.createIdentity({ externalId });
    const cert = await issueClientCertificate(stranger, externalId);
    const res = await certLogin(cert);
    expect(res.status).toBe(401);
    expect(res.json.error.code).toBe('INVALID_AUTH');
  });
});

describe('an API session ends with the credential it was made with', () => {
  const live = async (token: string) => (await e.call('client', { path: '/current-identity', token })).status;
  const hasApiSession = async (id: string) => (await mgmt(`/identities/${id}`)).json.data.hasApiSession as boolean;

  it("deleting an authenticator ends the sessions made with it, not the identity's others; re-enrolling one ends its sessions", async () => {
    const cert = await issueClientCertificate(pki, uniqueName('dev'));
    const who = await certIdentity(cert.certPem);
    const username = uniqueName('user');
    const password = `pw-${uniqueName('x')}`;
    const updb = await mgmt('/authenticators', {
      method: 'POST',
      body: { method: 'updb', identityId: who.id, username, password },
    });
    expect(updb.status).toBe(201);
    const byCert = (await certLogin(cert)).json.data.token as string;
    const byPassword = await e.login(username, password, 'client');
    const byPasswordToo = await e.login(username, password, 'management');
    const bystander = await e.createUser();
    for (const t of [byCert, byPassword, byPasswordToo, bystander.token]) expect(await live(t)).toBe(200);

    expect((await mgmt(`/authenticators/${who.authenticatorId}`, { method: 'DELETE' })).status).toBe(200);
    expect(await live(byCert)).toBe(401);
    expect(await live(byPassword)).toBe(200);
    expect(await live(byPasswordToo)).toBe(200);
    expect(await hasApiSession(who.id)).toBe(true);

    const reEnroll = await mgmt(`/authenticators/${updb.json.data.id}/re-enroll`, {
      method: 'POST',
      body: { expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
    });
    expect(reEnroll.status).toBe(201);
    expect(await live(byPassword)).toBe(401);
    expect(await live(byPasswordToo)).toBe(401);
    expect(await hasApiSession(who.id)).toBe(false);
    const sessions = await mgmt(`/api-sessions?filter=${encodeURIComponent(`identity = "${who.id}"`)}`);
    expect(sessions.json.data).toEqual([]);
    expect(await live(bystander.token)).toBe(200);
    expect(await hasApiSession(bystander.id)).toBe(true);
  });
});
