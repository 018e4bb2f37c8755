import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCsr } from '../../services/pki-enrollment/test/support.ts';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

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

const ident = (token: string, path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, token, ...init });

/**
 * A client certificate the controller issued, free to register again: an ott identity enrolls
 * with a CSR, then goes (and its authenticator with it).
 */
async function controllerIssuedCertificate(): Promise<string> {
  const donor = await e.createIdentity({ enrollment: { ott: true } });
  const token = (await ident(admin, `/identities/${donor}`)).json.data.enrollment.ott.token as string;
  const csr = await makeCsr(`CN=${donor}`);
  const enrolled = await e.call('client', {
    method: 'POST',
    path: `/enroll?method=ott&token=${token}`,
    rawBody: csr.csrPem,
    headers: { 'content-type': 'application/x-pem-file' },
  });
  expect(enrolled.status).toBe(200);
  expect((await ident(admin, `/identities/${donor}`, { method: 'DELETE' })).status).toBe(200);
  return enrolled.text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/)![0] + '\n';
}

/** A self-signed certificate made in the test, which no known CA vouches for. */
function selfSignedCert(cn: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'cert-'));
  try {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(join(dir, 'key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    execFileSync('openssl', [
      'req',
      '-new',
      '-x509',
      '-key',
      join(dir, 'key.pem'),
      '-subj',
      `/CN=${cn}`,
      '-days',
      '1',
      '-out',
      join(dir, 'cert.pem'),
    ]);
    return readFileSync(join(dir, 'cert.pem'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('password authentication and API sessions', () => {
  for (const api of ['client', 'management'] as const) {
    it(`POST ${api} /authenticate?method=password answers the session, with the token header`, async () => {
      const res = await e.call(api, {
        method: 'POST',
        path: '/authenticate?method=password',
        body: { username: user.username, password: user.password },
      });
      expect(res.status).toBe(200);
      const s = res.json.data;
      expect(res.headers['zt-session']).toBe(s.token);
      expect(s.token).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(s.id).toMatch(/^c[0-9a-z]{24}$/);
      expect(s).toMatchObject({
        identityId: user.id,
        identity: { id: user.id, entity: 'identities', _links: { self: { href: `./identities/${user.id}` } } },
        authenticatorId: user.authenticatorId,
        isMfaRequired: false,
        isMfaComplete: false,
        authQueries: [],
        expirationSeconds: 1800,
        configTypes: [],
        ipAddress: '127.0.0.1',
        _links: { self: { href: `./api-sessions/${s.id}` }, sessions: { href: `./api-sessions/${s.id}/sessions` } },
      });
      expect(Date.parse(s.expiresAt) - Date.parse(s.lastActivityAt)).toBe(1800_000);
    });
  }

  it('refuses wrong credentials with 401 INVALID_AUTH and missing ones with 400', async () => {
    for (const body of [
      { username: user.username, password: 'not-the-password' },
      { username: uniqueName('nobody'), password: 'whatever1' },
    ]) {
      const res = await e.call('client', { method: 'POST', path: '/authenticate?method=password', body });
      expect(res.status).toBe(401);
      expect(res.json.error.code).toBe('INVALID_AUTH');
    }
    const missing = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: user.username },
    });
    expect(missing.status).toBe(400);
    expect(missing.json.error.code).toBe('COULD_NOT_VALIDATE');
    const badMethod = await e.call('client', { method: 'POST', path: '/authenticate?method=magic', body: {} });
    expect(badMethod.status).toBe(400);
    expect(badMethod.json.error.cause.field).toBe('method');
  });

  it('reads and ends the current API session; the token is dead afterwards', async () => {
    const token = await e.login(user.username, user.password, 'client');
    const current = await e.call('client', { path: '/current-api-session', token });
    expect(current.status).toBe(200);
    expect(current.json.data.token).toBe(token);
    expect(current.headers['expiration-seconds']).toBe('1800');
    expect(String(current.headers['expires-at'])).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{9} \+0000 UTC$/);
    const logout = await e.call('client', { method: 'DELETE', path: '/current-api-session', token });
    expect(logout.status).toBe(200);
    expect(logout.json).toEqual({ data: {}, meta: {} });
    const after = await e.call('client', { path: '/current-api-session', token });
    expect(after.status).toBe(401);
    expect(after.json.error.code).toBe('UNAUTHORIZED');
  });

  it('lists, reads and deletes API sessions as an admin, filtered with ZitiQL', async () => {
    const token = await e.login(user.username, user.password);
    const list = await ident(admin, `/api-sessions?filter=${encodeURIComponent(`identity="${user.id}"`)}`);
    expect(list.status).toBe(200);
    expect(list.json.data.length).toBeGreaterThanOrEqual(2);
    expect(list.json.data.every((s: { identityId: string }) => s.identityId === user.id)).toBe(true);
    const mine = list.json.data.find((s: { token: string }) => s.token === token);
    const detail = await ident(admin, `/api-sessions/${mine.id}`);
    expect(detail.json.data).toMatchObject({ id: mine.id, identityId: user.id, authQueries: [] });
    expect((await ident(admin, `/api-sessions/${mine.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await ident(admin, `/api-sessions/${mine.id}`)).status).toBe(404);
    expect((await e.call('client', { path: '/current-api-session', token })).status).toBe(401);
    const bad = await ident(admin, `/api-sessions?filter=${encodeURIComponent('nosuchfield = 1')}`);
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('INVALID_FILTER');
  });

  it('answers GET /current-identity on both APIs with its own links', async () => {
    for (const api of ['client', 'management'] as const) {
      const res = await e.call(api, { path: '/current-identity', token: user.token });
      expect(res.status).toBe(200);
      expect(res.json.data).toMatchObject({
        id: user.id,
        isAdmin: false,
        hasApiSession: true,
        _links: { self: { href: './current-identity' } },
      });
    }
  });
});

describe('identities', () => {
  it('creates with every field and shows them in the detail', async () => {
    const name = uniqueName('alice');
    const externalId = uniqueName('ext');
    const service = await ident(admin, '/services', {
      method: 'POST',
      body: { name: uniqueName('hosted'), encryptionRequired: true },
    });
    expect(service.status).toBe(201);
    const svc1 = service.json.data.id as string;
    // Hosting costs and precedences only for services that exist, as the reference checks them.
    const unknownService = await ident(admin, '/identities', {
      method: 'POST',
      body: { name, type: 'User', isAdmin: false, serviceHostingCosts: { [svc1]: 5, 'no-such-service': 1 } },
    });
    expect(unknownService.status).toBe(404);
    expect(unknownService.json.error).toMatchObject({
      code: 'NOT_FOUND',
      cause: { message: 'services with id no-such-service not found' },
    });
    const created = await ident(admin, '/identities', {
      method: 'POST',
      body: {
        name,
        type: 'User',
        isAdmin: false,
        roleAttributes: ['eng', 'blue'],
        externalId,
        appData: { team: 'x' },
        tags: { env: 'test' },
        defaultHostingCost: 10,
        defaultHostingPrecedence: 'required',
        serviceHostingCosts: { [svc1]: 5 },
        serviceHostingPrecedences: { [svc1]: 'failed' },
      },
    });
    expect(created.status).toBe(201);
    const id = created.json.data.id;
    expect(created.json.data._links.self.href).toBe(`./identities/${id}`);
    const detail = await ident(admin, `/identities/${id}`);
    expect(detail.status).toBe(200);
    expect(detail.json.data).toMatchObject({
      id,
      name,
      typeId: 'Default',
      type: { id: 'Default', entity: 'identity-types' },
      isAdmin: false,
      isDefaultAdmin: false,
      roleAttributes: ['blue', 'eng'],
      externalId,
      appData: { team: 'x' },
      tags: { env: 'test' },
      defaultHostingCost: 10,
      defaultHostingPrecedence: 'required',
      serviceHostingCosts: { [svc1]: 5 },
      serviceHostingPrecedences: { [svc1]: 'failed' },
      authPolicyId: 'default',
      authPolicy: { id: 'default', name: 'Default', entity: 'auth-policies' },
      hasApiSession: false,
      hasEdgeRouterConnection: false,
      isMfaEnabled: false,
      disabled: false,
      authenticators: {},
      envInfo: {},
      sdkInfo: {},
    });
    expect(detail.json.data.disabledAt).toBeUndefined();
    const badPatch = await ident(admin, `/identities/${id}`, {
      method: 'PATCH',
      body: { serviceHostingPrecedences: { 'no-such-service': 'failed' } },
    });
    expect(badPatch.status).toBe(404);
    expect((await ident(admin, `/identities/${id}`)).json.data.serviceHostingPrecedences).toEqual({ [svc1]: 'failed' });
  });

  it('refuses a duplicate name or externalId with the field, and bad input with 400', async () => {
    const name = uniqueName('dup');
    const externalId = uniqueName('ext');
    await e.createIdentity({ name, externalId });
    const dupName = await ident(admin, '/identities', { method: 'POST', body: { name, type: 'User', isAdmin: false } });
    expect(dupName.status).toBe(400);
    expect(dupName.json.error.cause).toMatchObject({
      field: 'name',
      reason: `duplicate value '${name}' in unique index on identities store`,
    });
    const dupExt = await ident(admin, '/identities', {
      method: 'POST',
      body: { name: uniqueName('x'), type: 'User', isAdmin: false, externalId },
    });
    expect(dupExt.status).toBe(400);
    expect(dupExt.json.error.cause.field).toBe('externalId');
    const noName = await ident(admin, '/identities', { method: 'POST', body: { type: 'User', isAdmin: false } });
    expect(noName.status).toBe(400);
    expect(noName.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name' } });
    const badType = await ident(admin, '/identities', {
      method: 'POST',
      body: { name: uniqueName('x'), type: 'Robot', isAdmin: false },
    });
    expect(badType.status).toBe(400);
    expect(badType.json.error.cause.field).toBe('type');
    const badRole = await ident(admin, '/identities', {
      method: 'POST',
      body: { name: uniqueName('x'), type: 'User', isAdmin: false, roleAttributes: ['#eng'] },
    });
    expect(badRole.status).toBe(400);
    expect(badRole.json.error.cause.field).toBe('roleAttributes');
    const badPolicy = await ident(admin, '/identities', {
      method: 'POST',
      body: { name: uniqueName('x'), type: 'User', isAdmin: false, authPolicyId: 'nope' },
    });
    expect(badPolicy.status).toBe(400);
    expect(badPolicy.json.error.cause.field).toBe('authPolicyId');
    const notJson = await e.call('management', {
      method: 'POST',
      path: '/identities',
      token: admin,
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
    expect(notJson.json.error.code).toBe('COULD_NOT_PARSE_BODY');
  });

  it('replaces (PUT) and patches (PATCH) with the right semantics', async () => {
    const id = await e.createIdentity({ roleAttributes: ['a'], appData: { k: 1 }, tags: { t: 'x' } });
    const name = uniqueName('renamed');
    const patch = await ident(admin, `/identities/${id}`, { method: 'PATCH', body: { name } });
    expect(patch.status).toBe(200);
    let d = (await ident(admin, `/identities/${id}`)).json.data;
    expect(d).toMatchObject({ name, roleAttributes: ['a'], appData: { k: 1 }, tags: { t: 'x' } });
    // never set: "default", as the reference always sends it
    expect(d.defaultHostingPrecedence).toBe('default');
    const put = await ident(admin, `/identities/${id}`, { method: 'PUT', body: { name, type: 'User', isAdmin: true } });
    expect(put.status).toBe(200);
    d = (await ident(admin, `/identities/${id}`)).json.data;
    // no role attributes: null, as the reference shows an empty list
    expect(d).toMatchObject({ name, isAdmin: true, roleAttributes: null, appData: {}, tags: {} });
    const missing = await ident(admin, `/identities/${uniqueName('nope')}`, { method: 'PATCH', body: { name: 'x' } });
    expect(missing.status).toBe(404);
    expect(missing.json.error.code).toBe('NOT_FOUND');
  });

  it('deletes an identity, ends its sessions, and refuses to delete the default admin', async () => {
    const u = await e.createUser();
    expect((await ident(admin, `/identities/${u.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await ident(admin, `/identities/${u.id}`)).status).toBe(404);
    expect((await e.call('client', { path: '/current-api-session', token: u.token })).status).toBe(401);
    const defaultAdmin = (await ident(admin, `/identities?filter=${encodeURIComponent('isDefaultAdmin = true')}`)).json
      .data[0];
    const refused = await ident(admin, `/identities/${defaultAdmin.id}`, { method: 'DELETE' });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('ENTITY_CAN_NOT_BE_DELETED');
  });

  it('disables (ending sessions, refusing logins) and enables an identity', async () => {
    const u = await e.createUser();
    const disable = await ident(admin, `/identities/${u.id}/disable`, { method: 'POST', body: { durationMinutes: 0 } });
    expect(disable.status).toBe(200);
    const d = (await ident(admin, `/identities/${u.id}`)).json.data;
    expect(d.disabled).toBe(true);
    expect(d.disabledAt).toBeDefined();
    expect(d.disabledUntil).toBeUndefined();
    expect((await e.call('client', { path: '/current-api-session', token: u.token })).status).toBe(401);
    const refused = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: u.username, password: u.password },
    });
    expect(refused.status).toBe(401);
    expect((await ident(admin, `/identities/${u.id}/enable`, { method: 'POST' })).status).toBe(200);
    expect((await ident(admin, `/identities/${u.id}`)).json.data.disabled).toBe(false);
    await e.login(u.username, u.password);
    const timed = await ident(admin, `/identities/${u.id}/disable`, { method: 'POST', body: { durationMinutes: 5 } });
    expect(timed.status).toBe(200);
    const t = (await ident(admin, `/identities/${u.id}`)).json.data;
    expect(Date.parse(t.disabledUntil) - Date.parse(t.disabledAt)).toBe(5 * 60_000);
  });

  it('type Router on a create is a Default identity (as the reference), refused on an update', async () => {
    const made = await ident(admin, '/identities', {
      method: 'POST',
      body: { name: uniqueName('typed'), type: 'Router', isAdmin: false },
    });
    expect(made.status).toBe(201);
    const id = made.json.data.id;
    expect((await ident(admin, `/identities/${id}`)).json.data).toMatchObject({ typeId: 'Default' });
    const patched = await ident(admin, `/identities/${id}`, { method: 'PATCH', body: { type: 'Router' } });
    expect(patched.status).toBe(400);
    expect(patched.json.error.cause.field).toBe('type');
  });

  it("shows a login's envInfo and sdkInfo without their empty fields, as the reference does", async () => {
    const u = await e.createUser();
    const login = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: {
        username: u.username,
        password: u.password,
        envInfo: { os: 'linux', arch: 'amd64', domain: '', hostname: '' },
        sdkInfo: { type: 'bench', version: '', appId: 'x' },
      },
    });
    expect(login.status).toBe(200);
    await waitFor(async () => (await ident(admin, `/identities/${u.id}`)).json.data.envInfo?.os === 'linux', 'envInfo');
    const shown = (await ident(admin, `/identities/${u.id}`)).json.data;
    expect(shown.envInfo).toEqual({ os: 'linux', arch: 'amd64' });
    expect(shown.sdkInfo).toEqual({ type: 'bench', appId: 'x' });
  });

  it('lists the identity types', async () => {
    const list = await ident(admin, '/identity-types');
    expect(list.json.data.map((t: { id: string }) => t.id).sort()).toEqual(['Default', 'Router']);
    expect((await ident(admin, '/identity-types/Router')).json.data).toMatchObject({ id: 'Router', name: 'Router' });
    expect((await ident(admin, '/identity-types/Nope')).status).toBe(404);
  });
});

describe('authenticators', () => {
  it('creates updb and cert authenticators, one per method, and shows them on the identity', async () => {
    const id = await e.createIdentity();
    const username = uniqueName('u');
    const updb = await ident(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'updb', identityId: id, username, password: 'secret-1' },
    });
    expect(updb.status).toBe(201);
    const second = await ident(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'updb', identityId: id, username: uniqueName('u'), password: 'secret-1' },
    });
    expect(second.status).toBe(409);
    expect(second.json.error.code).toBe('MAX_AUTHENTICATOR_METHODS_REACHED');
    // A certificate no known CA signed is refused, as the reference refuses it (there with a 500).
    const selfSigned = selfSignedCert(uniqueName('cn'));
    const unknownCa = await ident(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'cert', identityId: id, certPem: selfSigned },
    });
    expect(unknownCa.status).toBe(400);
    expect(unknownCa.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'certPem' } });
    const certPem = await controllerIssuedCertificate();
    const fingerprint = new X509Certificate(certPem).fingerprint.replace(/:/g, '').toLowerCase();
    const cert = await ident(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'cert', identityId: id, certPem },
    });
    expect(cert.status).toBe(201);
    const other = await e.createIdentity();
    const reused = await ident(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'cert', identityId: other, certPem },
    });
    expect(reused.status).toBe(409);
    expect(reused.json.error.code).toBe('CERT_IN_USE');
    const detail = (await ident(admin, `/identities/${id}`)).json.data;
    expect(detail.authenticators).toEqual({
      updb: { id: updb.json.data.id, username },
      cert: { id: cert.json.data.id, fingerprint },
    });
    const list = await ident(admin, `/identities/${id}/authenticators`);
    expect(list.json.data.map((a: { method: string }) => a.method).sort()).toEqual(['cert', 'updb']);
    const one = await ident(admin, `/authenticators/${cert.json.data.id}`);
    expect(one.json.data).toMatchObject({ method: 'cert', identityId: id, fingerprint, certPem, identity: { id } });
    const bad = await ident(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'cert', identityId: id, certPem: 'nope' },
    });
    expect(bad.status).toBe(400);
    const unknownIdentity = await ident(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'updb', identityId: uniqueName('x'), username: uniqueName('u'), password: 'secret-1' },
    });
    expect(unknownIdentity.status).toBe(400);
    expect(unknownIdentity.json.error.cause.field).toBe('identityId');
    const shortPassword = await ident(admin, '/authenticators', {
      method: 'POST',
      body: { method: 'updb', identityId: other, username: uniqueName('u'), password: 'abc' },
    });
    expect(shortPassword.status).toBe(400);
    expect(shortPassword.json.error.cause.field).toBe('password');
  });

  it('updates a password (PUT), patches a username, and deletes', async () => {
    const u = await e.createUser();
    const put = await ident(admin, `/authenticators/${u.authenticatorId}`, {
      method: 'PUT',
      body: { username: u.username, password: 'new-secret-1' },
    });
    expect(put.status).toBe(200);
    expect(
      (
        await e.call('client', {
          method: 'POST',
          path: '/authenticate?method=password',
          body: { username: u.username, password: u.password },
        })
      ).status,
    ).toBe(401);
    await e.login(u.username, 'new-secret-1');
    const newName = uniqueName('renamed');
    expect(
      (await ident(admin, `/authenticators/${u.authenticatorId}`, { method: 'PATCH', body: { username: newName } }))
        .status,
    ).toBe(200);
    await e.login(newName, 'new-secret-1');
    expect((await ident(admin, `/authenticators/${u.authenticatorId}`, { method: 'DELETE' })).status).toBe(200);
    expect((await ident(admin, `/authenticators/${u.authenticatorId}`)).status).toBe(404);
    expect(
      (
        await e.call('client', {
          method: 'POST',
          path: '/authenticate?method=password',
          body: { username: newName, password: 'new-secret-1' },
        })
      ).status,
    ).toBe(401);
  });

  it('finds authenticators the way the CLI does', async () => {
    const u = await e.createUser();
    const filter = encodeURIComponent(`identity="${u.id}" and method="updb"`);
    const found = await ident(admin, `/authenticators?filter=${filter}`);
    expect(found.json.data.map((a: { id: string }) => a.id)).toEqual([u.authenticatorId]);
    expect(found.json.meta.pagination).toEqual({ limit: 10, offset: 0, totalCount: 1 });
    const hidden = await ident(admin, `/authenticators?filter=${encodeURIComponent('updbPassword != null')}`);
    expect(hidden.status).toBe(400);
    expect(hidden.json.error.code).toBe('INVALID_FILTER');
  });
});

describe('lists filter, sort and page like the original', () => {
  const prefix = uniqueName('ql').replace(/_/g, 'q');
  const names = ['web-a', 'web-b', 'web-c', 'db-a', 'db-b'].map((n) => `${prefix}-${n}`);
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    for (const [i, name] of names.entries()) {
      ids[name] = await e.createIdentity({
        name,
        roleAttributes: i < 3 ? ['web', prefix.toLowerCase().replace(/[^a-z]/g, '')] : ['db'],
      });
    }
  });

  const list = async (query: string) => {
    const res = await ident(admin, `/identities?${query}`);
    expect(res.status, res.text).toBe(200);
    return res.json;
  };
  const f = (filter: string) => `filter=${encodeURIComponent(filter)}`;

  it('name="x", id="x" or name="x", id in [...]', async () => {
    expect((await list(f(`name="${names[0]}"`))).data.map((i: { id: string }) => i.id)).toEqual([ids[names[0]!]]);
    expect((await list(f(`id = "${ids[names[1]!]}" or name="${names[1]}"`))).data).toHaveLength(1);
    const many = await list(f(`id in ["${ids[names[0]!]}", "${ids[names[3]!]}"]`));
    expect(many.data.map((i: { name: string }) => i.name).sort()).toEqual([names[0], names[3]].sort());
  });

  it('anyOf(roleAttributes), contains with ZAC paging params, sort by, skip and limit', async () => {
    const web = await list(
      `${f(`anyOf(roleAttributes)="web" and name contains "${prefix}"`)}&sort=${encodeURIComponent('name DESC')}`,
    );
    expect(web.data.map((i: { name: string }) => i.name)).toEqual([names[2], names[1], names[0]]);
    const zac = await list(
      `${f(`(name contains "${prefix}-web")`)}&limit=2&offset=1&sort=${encodeURIComponent('name ASC')}`,
    );
    expect(zac.data.map((i: { name: string }) => i.name)).toEqual([names[1], names[2]]);
    expect(zac.meta.pagination).toEqual({ limit: 2, offset: 1, totalCount: 3 });
    expect(zac.meta.filterableFields).toEqual(
      expect.arrayContaining(['id', 'name', 'roleAttributes', 'isAdmin', 'tags']),
    );
    const cli = await list(f(`name contains "${prefix}" sort by name skip 1 limit 2`));
    expect(cli.data.map((i: { name: string }) => i.name)).toEqual([...names].sort().slice(1, 3));
    expect(cli.meta.pagination).toEqual({ limit: 2, offset: 1, totalCount: 5 });
    const none = await list(f(`name contains "${prefix}" sort by name limit none`));
    // unlimited: math.MaxInt64, as the reference reports it
    expect(none.meta.pagination.limit).toBe(2 ** 63);
    expect(none.data).toHaveLength(5);
    const none2 = await list(f(`not (name contains "${prefix}-db") and name contains "${prefix}"`));
    expect(none2.meta.pagination.totalCount).toBe(3);
  });

  it('clamps limit and offset like the original', async () => {
    expect((await list('limit=100000')).meta.pagination.limit).toBe(500);
    expect((await list('limit=0')).meta.pagination.limit).toBe(10);
    const unlimited = await ident(admin, '/identities?limit=-1');
    expect(unlimited.json.meta.pagination.limit).toBe(2 ** 63);
    // the exact digits of math.MaxInt64, which a Go int64 reads (2^63 as JavaScript writes it is beyond it)
    expect(unlimited.text).toContain('"limit":9223372036854775807,');
    expect((await list(`${f('true skip 2 limit 1')}&limit=50&offset=0`)).meta.pagination).toMatchObject({
      limit: 1,
      offset: 2,
    });
  });

  it('rejects invalid filters and sorts with 400', async () => {
    for (const [query, code] of [
      [f('name = '), 'INVALID_FILTER'],
      [f('nosuch = 1'), 'INVALID_FILTER'],
      [f('roleAttributes = "x"'), 'INVALID_FILTER'],
      [f(`name = "x"; drop table identities`), 'INVALID_FILTER'],
      ['sort=nosuch%20asc', 'INVALID_SORT_IDENTIFIER'],
    ] as const) {
      const res = await ident(admin, `/identities?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.json.error.code, query).toBe(code);
    }
    const notInt = await ident(admin, '/identities?limit=abc');
    expect(notInt.status).toBe(400);
    expect(notInt.json.error.cause.field).toBe('limit');
  });

  it('restricts lists with roleFilter and roleSemantic', async () => {
    const tag = prefix.toLowerCase().replace(/[^a-z]/g, '');
    const allOf = await list(`roleFilter=%23web&roleFilter=%23${tag}&${f(`name contains "${prefix}"`)}`);
    expect(allOf.data).toHaveLength(3);
    const anyOf = await list(
      `roleFilter=%23${tag}&roleFilter=%23db&roleSemantic=AnyOf&${f(`name contains "${prefix}"`)}&limit=100`,
    );
    expect(anyOf.data).toHaveLength(5);
    const byId = await list(`roleFilter=%40${ids[names[4]!]}&roleFilter=%23nomatch&roleSemantic=AnyOf`);
    expect(byId.data.map((i: { id: string }) => i.id)).toEqual([ids[names[4]!]]);
  });
});

describe('identity events reach the policy service', () => {
  it('a new attribute appears in /identity-role-attributes', async () => {
    const attr = uniqueName('attr').toLowerCase();
    await e.createIdentity({ roleAttributes: [attr] });
    await waitFor(async () => {
      const res = await ident(admin, `/identity-role-attributes?filter=${encodeURIComponent(`id = "${attr}"`)}`);
      return res.status === 200 && res.json.data.includes(attr);
    }, 'the attribute to reach policy');
    const res = await ident(admin, `/identity-role-attributes?filter=${encodeURIComponent(`id = "${attr}"`)}`);
    expect(res.json.data).toEqual([attr]);
  });

  it('converges after the policy service was down while identities changed', async () => {
    await e.cluster.stopService('policy');
    const a = uniqueName('offline').toLowerCase();
    const b = uniqueName('gone').toLowerCase();
    const id = await e.createIdentity({ roleAttributes: [a, b] });
    expect((await ident(admin, `/identities/${id}`, { method: 'PATCH', body: { roleAttributes: [a] } })).status).toBe(
      200,
    );
    const down = await ident(admin, '/identity-role-attributes');
    expect(down.status).toBe(503);
    await e.cluster.startService('policy');
    await waitFor(
      async () => {
        const res = await ident(
          admin,
          `/identity-role-attributes?filter=${encodeURIComponent(`id = "${a}" or id = "${b}"`)}`,
        );
        return res.status === 200 && JSON.stringify(res.json.data) === JSON.stringify([a]);
      },
      'the read model to converge',
      30_000,
    );
  });
});

describe('caller matrix', () => {
  const adminOnly: [string, string][] = [
    ['GET', '/identities'],
    ['POST', '/identities'],
    ['GET', '/identities/x'],
    ['PUT', '/identities/x'],
    ['PATCH', '/identities/x'],
    ['DELETE', '/identities/x'],
    ['POST', '/identities/x/disable'],
    ['POST', '/identities/x/enable'],
    ['GET', '/identities/x/authenticators'],
    ['GET', '/authenticators'],
    ['POST', '/authenticators'],
    ['GET', '/authenticators/x'],
    ['PUT', '/authenticators/x'],
    ['PATCH', '/authenticators/x'],
    ['DELETE', '/authenticators/x'],
    ['GET', '/api-sessions'],
    ['GET', '/api-sessions/x'],
    ['DELETE', '/api-sessions/x'],
    ['GET', '/identity-types'],
    ['GET', '/identity-types/x'],
    ['GET', '/identity-role-attributes'],
  ];

  it('anonymous and non-admin callers get 401 UNAUTHORIZED on admin operations; admins pass', async () => {
    for (const [method, path] of adminOnly) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : {};
      for (const token of [undefined, user.token]) {
        const res = await e.call('management', {
          method,
          path,
          ...(token ? { token } : {}),
          ...(body ? { body } : {}),
        });
        expect(res.status, `${method} ${path} as ${token ? 'non-admin' : 'anonymous'}`).toBe(401);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
      }
      const res = await e.call('management', { method, path, token: admin, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${path} as admin`).not.toBe(401);
    }
  });

  it('any authenticated caller reads its own session and identity; anonymous ones cannot', async () => {
    for (const path of ['/current-api-session', '/current-identity']) {
      const anonymous = await e.call('client', { path });
      expect(anonymous.status).toBe(401);
      // no credential at all: the reference's go-openapi cause; an unknown token: none
      expect(anonymous.json.error.cause).toEqual({
        code: 'UNHANDLED',
        message: 'unauthenticated for invalid credentials',
      });
      const unknown = await e.call('client', {
        path,
        headers: { 'zt-session': '8ef5b8b1-3f8e-4a0b-9d0c-2f0f5f0e8a11' },
      });
      expect(unknown.status).toBe(401);
      expect(unknown.json.error.cause).toBeUndefined();
      expect((await e.call('client', { path, token: user.token })).status).toBe(200);
      expect((await e.call('management', { path, token: admin })).status).toBe(200);
    }
  });
});
