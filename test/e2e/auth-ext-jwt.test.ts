import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  JwksServer,
  type SigningKey,
  certificateFor,
  newSigningKey,
  signToken,
} from '../../services/auth/test/authentication/jwt-kit.ts';
import { type E2e, authPolicyBody, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * External JWT signers (management CRUD, the client's anonymous listing) and `method=ext-jwt`
 * through the gateway: the six rules of seed §5.1, a certificate signer and a JWKS signer served
 * from loopback whose keys rotate, the auth policy's allowed signers, and
 * `secondary.requireExtJwtSigner` demanding the JWT on every call.
 */
let e: E2e;
let admin: string;
let user: Awaited<ReturnType<E2e['createUser']>>;
const jwks = new JwksServer();
let jwksUrl: string;
let certKey: SigningKey;
let certSignerId: string;
const certIssuer = `https://${uniqueName('cert-idp')}.example`;
let jwksKey: SigningKey;
let jwksSignerId: string;
const jwksIssuer = `https://${uniqueName('jwks-idp')}.example`;

const mgmt = (token: string | undefined, path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, ...(token ? { token } : {}), ...init });

async function createSigner(body: Record<string, unknown>): Promise<string> {
  const res = await mgmt(admin, '/external-jwt-signers', { method: 'POST', body });
  if (res.status !== 201) throw new Error(`signer create failed: ${res.status} ${res.text}`);
  return res.json.data.id as string;
}

const extJwtLogin = (token: string | undefined, api: 'client' | 'management' = 'client') =>
  e.call(api, {
    method: 'POST',
    path: '/authenticate?method=ext-jwt',
    body: {},
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });

const policyBody = authPolicyBody;

beforeAll(async () => {
  e = await startE2e();
  admin = e.adminToken;
  user = await e.createUser();
  jwksUrl = await jwks.start();
  certKey = await newSigningKey('cert-kid-1', 'RS256');
  jwksKey = await newSigningKey('jwks-kid-1', 'ES256');
  jwks.serve(jwksKey);
  certSignerId = await createSigner({
    name: uniqueName('cert-signer'),
    enabled: true,
    issuer: certIssuer,
    audience: 'ziti-controller',
    certPem: await certificateFor(certKey, 'cert-idp'),
    kid: 'cert-kid-1',
    externalAuthUrl: 'https://login.cert-idp.example/authorize',
    clientId: 'ziti',
    scopes: ['openid'],
  });
  jwksSignerId = await createSigner({
    name: uniqueName('jwks-signer'),
    enabled: true,
    issuer: jwksIssuer,
    audience: 'ziti-controller',
    jwksEndpoint: jwksUrl,
    claimsProperty: 'email',
    useExternalId: true,
    externalAuthUrl: 'https://login.jwks-idp.example/authorize',
  });
});
afterAll(async () => {
  await e?.stop();
  await jwks.close();
});

describe('external JWT signers (management)', () => {
  it('shows a certificate signer with its certificate facts and a JWKS signer with its endpoint', async () => {
    const cert = await mgmt(admin, `/external-jwt-signers/${certSignerId}`);
    expect(cert.status).toBe(200);
    expect(cert.json.data).toMatchObject({
      id: certSignerId,
      enabled: true,
      issuer: certIssuer,
      audience: 'ziti-controller',
      kid: 'cert-kid-1',
      commonName: 'cert-idp',
      jwksEndpoint: null,
      claimsProperty: 'sub',
      useExternalId: false,
      externalAuthUrl: 'https://login.cert-idp.example/authorize',
      clientId: 'ziti',
      scopes: ['openid'],
      _links: { self: { href: `./external-jwt-signers/${certSignerId}` } },
    });
    expect(cert.json.data.fingerprint).toMatch(/^[0-9a-f]{40}$/);
    expect(Date.parse(cert.json.data.notAfter)).toBeGreaterThan(Date.now());
    const j = (await mgmt(admin, `/external-jwt-signers/${jwksSignerId}`)).json.data;
    expect(j).toMatchObject({
      jwksEndpoint: jwksUrl,
      certPem: null,
      claimsProperty: 'email',
      useExternalId: true,
      fingerprint: '',
    });
    const list = await mgmt(admin, `/external-jwt-signers?filter=${encodeURIComponent(`issuer="${jwksIssuer}"`)}`);
    expect(list.json.data.map((s: { id: string }) => s.id)).toEqual([jwksSignerId]);
    expect(list.json.meta.pagination.totalCount).toBe(1);
  });

  it('create refuses: both or neither key source, a certificate without kid or unparsable, bad URLs, duplicates', async () => {
    const base = { name: uniqueName('s'), enabled: true, issuer: `https://${uniqueName('i')}`, audience: 'a' };
    const certPem = await certificateFor(await newSigningKey('k'), 'x');
    for (const [body, field] of [
      [{ ...base, jwksEndpoint: 'https://x.example/jwks', certPem, kid: 'k' }, 'jwksEndpoint'],
      [base, 'certPem'],
      [{ ...base, certPem }, 'kid'],
      [{ ...base, certPem: 'not a certificate', kid: 'k' }, 'certPem'],
      [{ ...base, jwksEndpoint: 'not a url' }, 'jwksEndpoint'],
      [{ ...base, name: undefined, jwksEndpoint: 'https://x.example/jwks' }, 'name'],
      [{ ...base, issuer: certIssuer, jwksEndpoint: 'https://x.example/jwks' }, 'issuer'],
      [{ ...base, jwksEndpoint: 'https://x.example/jwks', kid: 'cert-kid-1' }, 'kid'],
    ] as const) {
      const res = await mgmt(admin, '/external-jwt-signers', { method: 'POST', body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.json.error.code).toBe('COULD_NOT_VALIDATE');
      expect(res.json.error.cause.field).toBe(field);
    }
  });

  it('replace, patch (an omitted or null field keeps its value, as the reference reads PATCH keys) and delete; a signer a policy names can not be deleted', async () => {
    const name = uniqueName('crud');
    const issuer = `https://${uniqueName('crud')}.example`;
    const id = await createSigner({
      name,
      enabled: true,
      issuer,
      audience: 'a',
      jwksEndpoint: 'https://idp.example/jwks',
      externalAuthUrl: 'https://idp.example/login',
    });
    const put = await mgmt(admin, `/external-jwt-signers/${id}`, {
      method: 'PUT',
      body: {
        name,
        enabled: false,
        issuer,
        audience: 'b',
        jwksEndpoint: 'https://idp.example/jwks2',
        externalAuthUrl: 'https://idp.example/login2',
        tags: { v: '2' },
      },
    });
    expect(put.status).toBe(200);
    expect((await mgmt(admin, `/external-jwt-signers/${id}`)).json.data).toMatchObject({
      enabled: false,
      audience: 'b',
      jwksEndpoint: 'https://idp.example/jwks2',
      tags: { v: '2' },
    });
    const patch = await mgmt(admin, `/external-jwt-signers/${id}`, {
      method: 'PATCH',
      body: { enabled: true, clientId: null, audience: null },
    });
    expect(patch.status).toBe(200);
    expect((await mgmt(admin, `/external-jwt-signers/${id}`)).json.data).toMatchObject({
      enabled: true,
      audience: 'b',
      externalAuthUrl: 'https://idp.example/login2',
      clientId: '',
    });

    const policy = await mgmt(admin, '/auth-policies', {
      method: 'POST',
      body: policyBody({ extJwt: { allowedSigners: [id] } }),
    });
    const blocked = await mgmt(admin, `/external-jwt-signers/${id}`, { method: 'DELETE' });
    expect(blocked.status).toBe(409);
    expect(blocked.json.error).toMatchObject({
      code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
      cause: { value: `[${policy.json.data.id}]` },
    });
    await mgmt(admin, `/auth-policies/${policy.json.data.id}`, { method: 'DELETE' });
    expect((await mgmt(admin, `/external-jwt-signers/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await mgmt(admin, `/external-jwt-signers/${id}`)).status).toBe(404);
  });

  it('a signer without externalAuthUrl: the spec requires a URL there, so the management detail carries an empty string', async () => {
    const id = await createSigner({
      name: uniqueName('no-url'),
      enabled: true,
      issuer: `https://${uniqueName('n')}`,
      audience: null,
      jwksEndpoint: 'https://idp.example/jwks',
    });
    // Not spec-validated: `externalAuthUrl` is a required `url` the signer does not have (reference: null).
    const res = await mgmt(admin, `/external-jwt-signers/${id}`, { skipValidation: true });
    expect(res.json.data).toMatchObject({ externalAuthUrl: '', audience: '', notBefore: '0001-01-01T00:00:00.000Z' });
    const client = await e.call('client', { path: '/external-jwt-signers?limit=500' });
    expect(client.json.data.map((s: { id: string }) => s.id)).not.toContain(id);
    await mgmt(admin, `/external-jwt-signers/${id}`, { method: 'DELETE' });
  });

  it('caller matrix: management is admin only; the client listing is anonymous and shows only what a login needs', async () => {
    for (const token of [undefined, user.token]) {
      expect((await mgmt(token, '/external-jwt-signers')).status).toBe(401);
      expect((await mgmt(token, `/external-jwt-signers/${certSignerId}`)).status).toBe(401);
      expect(
        (
          await mgmt(token, '/external-jwt-signers', {
            method: 'POST',
            body: { name: 'x', enabled: true, issuer: 'x', audience: 'x' },
          })
        ).status,
      ).toBe(401);
      expect(
        (await mgmt(token, `/external-jwt-signers/${certSignerId}`, { method: 'PATCH', body: { enabled: false } }))
          .status,
      ).toBe(401);
      expect((await mgmt(token, `/external-jwt-signers/${certSignerId}`, { method: 'DELETE' })).status).toBe(401);
    }
    const disabledId = await createSigner({
      name: uniqueName('off'),
      enabled: false,
      issuer: `https://${uniqueName('off')}`,
      audience: 'a',
      jwksEndpoint: 'https://x/jwks',
      externalAuthUrl: 'https://x/login',
    });
    for (const token of [undefined, user.token]) {
      const res = await e.call('client', { path: '/external-jwt-signers?limit=500', ...(token ? { token } : {}) });
      expect(res.status).toBe(200);
      const ids = res.json.data.map((s: { id: string }) => s.id);
      expect(ids).toEqual(expect.arrayContaining([certSignerId, jwksSignerId]));
      expect(ids).not.toContain(disabledId);
      const shown = res.json.data.find((s: { id: string }) => s.id === certSignerId);
      expect(Object.keys(shown).sort()).toEqual(['_links', 'createdAt', 'externalAuthUrl', 'id', 'name', 'updatedAt']);
      expect(shown.externalAuthUrl).toBe('https://login.cert-idp.example/authorize');
    }
  });
});

describe('method=ext-jwt', () => {
  it('a certificate signer: the identity is the sub; every rule that fails is 401 INVALID_AUTH', async () => {
    const id = await e.createIdentity();
    const token = (o: Parameters<typeof signToken>[1] = {}) =>
      signToken(certKey, { issuer: certIssuer, audience: 'ziti-controller', subject: id, ...o });
    const ok = await extJwtLogin(await token(), 'management');
    expect(ok.status).toBe(200);
    expect(ok.json.data).toMatchObject({ identityId: id, authQueries: [], isMfaRequired: false });
    expect(ok.headers['zt-session']).toBe(ok.json.data.token);
    expect((await e.call('client', { path: '/current-identity', token: ok.json.data.token })).json.data.id).toBe(id);

    const other = await newSigningKey('cert-kid-1', 'RS256');
    const cases: [string, string | undefined][] = [
      ['no bearer', undefined],
      ['rule 1, issuer', await token({ issuer: 'https://unknown.example' })],
      ['rule 2, audience', await token({ audience: 'someone-else' })],
      ['rule 3, claim', await token({ subject: 'no-such-identity' })],
      ['rule 3, missing claim', await token({ subject: undefined })],
      ['rule 4, signature', await signToken(other, { issuer: certIssuer, audience: 'ziti-controller', subject: id })],
      ['rule 5, kid', await token({ kid: 'another-kid' })],
      ['rule 5, no kid', await token({ kid: null })],
      ['rule 6, expired', await token({ expiresIn: -30 })],
      ['rule 6, no expiry', await token({ expiresIn: null })],
      ['garbage', 'not-a-jwt'],
    ];
    for (const [what, jwt] of cases) {
      const res = await extJwtLogin(jwt);
      expect(res.status, what).toBe(401);
      expect(res.json.error.code, what).toBe('INVALID_AUTH');
    }
  });

  it('a JWKS signer matched on a private claim to the external id; keys are cached and rotate', async () => {
    const email = `${uniqueName('person')}@example.com`;
    const id = await e.createIdentity({ externalId: email });
    const fetchesBefore = jwks.fetches;
    for (let i = 0; i < 3; i++) {
      const res = await extJwtLogin(
        await signToken(jwksKey, { issuer: jwksIssuer, audience: 'ziti-controller', claims: { email } }),
      );
      expect(res.status).toBe(200);
      expect(res.json.data.identityId).toBe(id);
    }
    expect(jwks.fetches - fetchesBefore).toBeLessThanOrEqual(1);
    expect(
      (await extJwtLogin(await signToken(jwksKey, { issuer: jwksIssuer, audience: 'ziti-controller', subject: id })))
        .status,
    ).toBe(401);
    expect(
      (
        await extJwtLogin(
          await signToken(jwksKey, {
            issuer: jwksIssuer,
            audience: 'ziti-controller',
            claims: { email: 'nobody@example.com' },
          }),
        )
      ).status,
    ).toBe(401);

    // The IdP rotates to a new key: an unknown kid makes auth fetch the JWKS again.
    const rotated = await newSigningKey('jwks-kid-2', 'RS256');
    jwks.serve(rotated);
    const fetchesAtRotation = jwks.fetches;
    const res = await waitFor(async () => {
      const r = await extJwtLogin(
        await signToken(rotated, { issuer: jwksIssuer, audience: 'ziti-controller', claims: { email } }),
      );
      return r.status === 200 ? r : null;
    }, 'a login with the rotated key');
    expect(res.json.data.identityId).toBe(id);
    expect(jwks.fetches).toBeGreaterThan(fetchesAtRotation);
    // The retired key no longer verifies once the set is fetched again.
    expect(
      (
        await extJwtLogin(
          await signToken(jwksKey, { issuer: jwksIssuer, audience: 'ziti-controller', claims: { email } }),
        )
      ).status,
    ).toBe(401);
    jwks.serve(jwksKey, rotated);
  });

  it('the auth policy decides which signers a login may use', async () => {
    const only = await mgmt(admin, '/auth-policies', {
      method: 'POST',
      body: policyBody({ extJwt: { allowedSigners: [jwksSignerId] } }),
    });
    const off = await mgmt(admin, '/auth-policies', {
      method: 'POST',
      body: policyBody({ extJwt: { allowed: false } }),
    });
    const id = await e.createIdentity({ authPolicyId: only.json.data.id });
    const jwt = await signToken(certKey, { issuer: certIssuer, audience: 'ziti-controller', subject: id });
    expect((await extJwtLogin(jwt)).status).toBe(401);
    await mgmt(admin, `/auth-policies/${only.json.data.id}`, {
      method: 'PATCH',
      body: { primary: { extJwt: { allowedSigners: [certSignerId, jwksSignerId] } } },
    });
    expect((await extJwtLogin(jwt)).status).toBe(200);
    await mgmt(admin, `/identities/${id}`, { method: 'PATCH', body: { authPolicyId: off.json.data.id } });
    expect((await extJwtLogin(jwt)).status).toBe(401);
    // A disabled signer is not used.
    await mgmt(admin, `/identities/${id}`, { method: 'PATCH', body: { authPolicyId: 'default' } });
    await mgmt(admin, `/external-jwt-signers/${certSignerId}`, { method: 'PATCH', body: { enabled: false } });
    expect((await extJwtLogin(jwt)).status).toBe(401);
    await mgmt(admin, `/external-jwt-signers/${certSignerId}`, { method: 'PATCH', body: { enabled: true } });
    expect((await extJwtLogin(jwt)).status).toBe(200);
  });
});

describe('secondary.requireExtJwtSigner', () => {
  it('every call needs a valid JWT of that signer; without it the session is partial with an EXT-JWT query', async () => {
    const policy = await mgmt(admin, '/auth-policies', {
      method: 'POST',
      body: policyBody({ secondary: { requireExtJwtSigner: certSignerId } }),
    });
    expect(policy.status).toBe(201);
    const u = await e.createUser();
    await mgmt(admin, `/identities/${u.id}`, { method: 'PATCH', body: { authPolicyId: policy.json.data.id } });
    const extJwtQuery = { typeId: 'EXT-JWT', provider: 'url', httpUrl: 'https://login.cert-idp.example/authorize' };

    const login = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: u.username, password: u.password },
    });
    expect(login.status).toBe(200);
    expect(login.json.data.authQueries).toEqual([expect.objectContaining(extJwtQuery)]);
    const token = login.json.data.token as string;

    const jwt = await signToken(certKey, { issuer: certIssuer, audience: 'ziti-controller', subject: u.id });
    const withJwt = { authorization: `Bearer ${jwt}` };
    const without = await e.call('client', { path: '/current-identity', token });
    expect(without.status).toBe(401);
    const current = await e.call('client', { path: '/current-api-session', token });
    expect(current.json.data.authQueries).toEqual([expect.objectContaining(extJwtQuery)]);
    expect((await e.call('client', { path: '/current-identity', token, headers: withJwt })).status).toBe(200);
    expect((await e.call('client', { path: '/current-identity', token, headers: withJwt })).status).toBe(200);
    expect(
      (await e.call('client', { path: '/current-api-session', token, headers: withJwt })).json.data.authQueries,
    ).toEqual([]);
    // The JWT must be the signer's, for this identity, and valid.
    const someoneElse = await signToken(certKey, { issuer: certIssuer, audience: 'ziti-controller', subject: user.id });
    const fromOtherSigner = await signToken(jwksKey, {
      issuer: jwksIssuer,
      audience: 'ziti-controller',
      subject: u.id,
    });
    const expired = await signToken(certKey, {
      issuer: certIssuer,
      audience: 'ziti-controller',
      subject: u.id,
      expiresIn: -10,
    });
    for (const bad of [someoneElse, fromOtherSigner, expired, 'garbage']) {
      expect(
        (await e.call('client', { path: '/current-identity', token, headers: { authorization: `Bearer ${bad}` } }))
          .status,
      ).toBe(401);
    }
    // Logging in with that signer's JWT satisfies it for the login answer too.
    const jwtLogin = await extJwtLogin(jwt);
    expect(jwtLogin.json.data.authQueries).toEqual([]);
    // Back to the default policy: the live session no longer needs the JWT.
    await mgmt(admin, `/identities/${u.id}`, { method: 'PATCH', body: { authPolicyId: 'default' } });
    expect((await e.call('client', { path: '/current-identity', token })).status).toBe(200);
  });
});
