import { X509Certificate, createHash, createPublicKey, randomUUID, verify as verifySignature } from 'node:crypto';
import { connect } from 'node:tls';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePemChain, verifyChain, verifyEnrollmentJwt } from '@ziti/x509';
import {
  type TestCa,
  makeCsr,
  makeTestCa,
  verificationCertificate,
} from '../../services/pki-enrollment/test/support.ts';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Enrollment end to end (ZITI-FACTS §8): every flow with key pairs and CSRs made here, certificates
 * checked against the chain the controller serves, and the certificates used to log in.
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

const mgmt = (path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, token: admin, ...init });
const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

/** The leaf certificate the HTTPS listener presents (what the Go SDK fetches to verify a JWT). */
function presentedServerCertificate(): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port: e.cluster.port, servername: 'localhost', rejectUnauthorized: false },
      () => {
        const raw = socket.getPeerCertificate().raw;
        socket.end();
        resolve(new X509Certificate(raw).toString());
      },
    );
    socket.on('error', reject);
  });
}

async function identityWith(enrollment: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const id = await e.createIdentity({ enrollment, ...extra });
  const detail = await mgmt(`/identities/${id}`);
  expect(detail.status).toBe(200);
  return { id, detail: detail.json.data };
}

/** `POST /enroll?method=ott&token=…` with a PEM CSR, as the Go SDK does. */
async function enrollOtt(token: string, subject: string, accept?: string) {
  const csr = await makeCsr(subject);
  const res = await e.call('client', {
    method: 'POST',
    path: `/enroll?method=ott&token=${token}`,
    rawBody: csr.csrPem,
    headers: { 'content-type': 'application/x-pem-file', ...(accept ? { accept } : {}) },
  });
  return { res, keyPem: csr.keyPem };
}

async function certLogin(certPem: string, keyPem: string) {
  return e.call('client', { method: 'POST', path: '/authenticate?method=cert', body: {}, cert: certPem, key: keyPem });
}

async function createCa(ca: TestCa, flags: Record<string, unknown> = {}) {
  const res = await mgmt('/cas', {
    method: 'POST',
    body: {
      name: uniqueName('ca'),
      certPem: ca.rootPem,
      isAutoCaEnrollmentEnabled: false,
      isOttCaEnrollmentEnabled: false,
      isAuthEnabled: false,
      identityRoles: [],
      ...flags,
    },
  });
  expect(res.status).toBe(201);
  const detail = (await mgmt(`/cas/${res.json.data.id}`)).json.data;
  return detail as { id: string; name: string; verificationToken: string };
}

async function verifyCa(ca: TestCa, record: { id: string; verificationToken: string }) {
  const res = await mgmt(`/cas/${record.id}/verify`, {
    method: 'POST',
    rawBody: await verificationCertificate(ca, record.verificationToken),
    headers: { 'content-type': 'text/plain' },
  });
  expect(res.status).toBe(200);
}

describe('controller PKI and enrollment JWTs', () => {
  it('an identity created with enrollment.ott shows it at once; its JWT verifies with the certificate the server presents', async () => {
    const { id, detail } = await identityWith({ ott: true });
    const ott = detail.enrollment.ott;
    expect(ott).toMatchObject({ id: expect.any(String), token: expect.any(String), jwt: expect.any(String) });
    expect(Date.parse(ott.expiresAt) - Date.now()).toBeGreaterThan(170 * 60_000);
    expect(Date.parse(ott.expiresAt) - Date.now()).toBeLessThanOrEqual(180 * 60_000);
    const serverPem = await presentedServerCertificate();
    const { header, claims } = await verifyEnrollmentJwt(ott.jwt, serverPem);
    expect(header).toEqual({
      alg: 'ES256',
      kid: createHash('sha1').update(new X509Certificate(serverPem).raw).digest('hex'),
      typ: 'JWT',
    });
    expect(claims).toEqual({
      iss: `https://localhost:${e.cluster.port}`,
      sub: id,
      aud: [''],
      exp: Math.floor(Date.parse(ott.expiresAt) / 1000),
      jti: ott.token,
      em: 'ott',
      ctrls: null,
    });
    // the server certificate chains to the bundle served at /.well-known/est/cacerts
    await verifyChain(serverPem, [], e.caPems, { usage: 'serverAuth' });
  });

  it('identity + enrollment creation is atomic: a bad enrollment leaves no identity; deleting the identity takes its enrollment', async () => {
    const name = uniqueName('atomic');
    const bad = await mgmt('/identities', {
      method: 'POST',
      body: { name, type: 'User', isAdmin: false, enrollment: { ottca: 'no-such-ca' } },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('REFERENCED_ENTITY_NOT_FOUND');
    expect((await mgmt(`/identities?filter=${encodeURIComponent(`name="${name}"`)}`)).json.data).toEqual([]);

    const { id, detail } = await identityWith({ updb: uniqueName('u') });
    const enrollmentId = detail.enrollment.updb.id;
    expect((await mgmt(`/enrollments/${enrollmentId}`)).status).toBe(200);
    expect((await mgmt(`/identities/${id}`, { method: 'DELETE' })).status).toBe(200);
    await waitFor(
      async () => (await mgmt(`/enrollments/${enrollmentId}`)).status === 404,
      'the enrollment to go with its identity',
    );
  });

  it('serves the enrollment JWKS and signs a challenge nonce with that key', async () => {
    const jwks = await e.call('client', { path: '/enroll/jwks' });
    expect(jwks.status).toBe(200);
    const [key] = jwks.json.keys;
    const serverPem = await presentedServerCertificate();
    expect(key).toMatchObject({
      kty: 'EC',
      crv: 'P-256',
      alg: 'ES256',
      use: 'sig',
      kid: createHash('sha1').update(new X509Certificate(serverPem).raw).digest('hex'),
    });
    expect(Buffer.from(key.x5c[0], 'base64')).toEqual(new X509Certificate(serverPem).raw);
    const nonce = randomUUID();
    const challenge = await e.call('client', {
      method: 'POST',
      path: '/enroll/challenge',
      body: { keyId: key.kid, nonce },
    });
    expect(challenge.status).toBe(200);
    expect(challenge.json).toMatchObject({ algorithm: 'ES256', kid: key.kid });
    expect(challenge.json.caPool).toBe(e.caPems.join(''));
    const ok = verifySignature(
      'sha256',
      Buffer.from(nonce),
      { key: createPublicKey({ key, format: 'jwk' }), dsaEncoding: 'ieee-p1363' },
      Buffer.from(challenge.json.signature, 'base64'),
    );
    expect(ok).toBe(true);
    const badKid = await e.call('client', {
      method: 'POST',
      path: '/enroll/challenge',
      body: { keyId: 'nope', nonce },
    });
    expect(badKid.status).toBe(400);
    expect(badKid.json.error.cause.field).toBe('keyId');
    const badNonce = await e.call('client', {
      method: 'POST',
      path: '/enroll/challenge',
      body: { keyId: key.kid, nonce: 'x' },
    });
    expect(badNonce.json.error.cause.field).toBe('nonce');
  });
});

describe('ott enrollment', () => {
  it('signs the CSR (PEM answer), the certificate verifies against the served chain and logs in with method=cert', async () => {
    const { id, detail } = await identityWith({ ott: true });
    const { res, keyPem } = await enrollOtt(detail.enrollment.ott.token, `C=US, O=NetFoundry, CN=${id}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-pem-file/);
    const [leaf] = parsePemChain(res.text);
    expect(parsePemChain(res.text)).toHaveLength(1);
    expect(leaf!.subject).toBe(`C=US, O=NetFoundry, CN=${id}`);
    expect(leaf!.notAfter.getTime() - Date.now()).toBeGreaterThan(364 * 86_400_000);
    await verifyChain(res.text, [], e.caPems, { usage: 'clientAuth' });

    const after = (await mgmt(`/identities/${id}`)).json.data;
    expect(after.enrollment).toEqual({});
    expect(after.authenticators.cert).toEqual({ id: expect.any(String), fingerprint: leaf!.fingerprint });

    const login = await certLogin(res.text, keyPem);
    expect(login.status).toBe(200);
    expect(login.json.data.identityId).toBe(id);
    const me = await e.call('client', { path: '/current-identity', token: login.json.data.token });
    expect(me.json.data.id).toBe(id);

    const again = await enrollOtt(detail.enrollment.ott.token, `CN=${id}`);
    expect(again.res.status).toBe(400);
    expect(again.res.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
  });

  it('answers JSON (leaf + intermediate) when Accept asks for it, and always on /enroll/ott (JSON token body too)', async () => {
    const { detail } = await identityWith({ ott: true });
    const { res } = await enrollOtt(detail.enrollment.ott.token, 'CN=json', 'application/json');
    expect(res.status).toBe(200);
    expect(parsePemChain(res.json.data.cert)).toHaveLength(2);
    expect(res.json.meta).toEqual({});

    const second = await identityWith({ ott: true });
    const csr = await makeCsr('CN=ott-path');
    const viaPath = await e.call('client', {
      method: 'POST',
      path: `/enroll/ott?token=${second.detail.enrollment.ott.token}`,
      rawBody: csr.csrPem,
      headers: { 'content-type': 'application/x-pem-file' },
    });
    expect(viaPath.status).toBe(200);
    expect((await certLogin(viaPath.json.data.cert, csr.keyPem)).status).toBe(200);

    // the spec's body form: {token, clientCsr}
    const third = await identityWith({ ott: true });
    const csr3 = await makeCsr('CN=ott-body');
    const viaBody = await e.call('client', {
      method: 'POST',
      path: '/enroll/ott',
      body: { token: third.detail.enrollment.ott.token, clientCsr: csr3.csrPem },
    });
    expect(viaBody.status).toBe(200);
    expect((await certLogin(viaBody.json.data.cert, csr3.keyPem)).status).toBe(200);

    // a DER CSR as application/pkcs10
    const fourth = await identityWith({ ott: true });
    const csr4 = await makeCsr('CN=ott-der');
    const der = Buffer.from(csr4.csrPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
    const viaDer = await e.call('client', {
      method: 'POST',
      path: `/enroll?token=${fourth.detail.enrollment.ott.token}`,
      rawBody: der,
      headers: { 'content-type': 'application/pkcs10' },
    });
    expect(viaDer.status).toBe(200);
    expect((await certLogin(viaDer.text, csr4.keyPem)).status).toBe(200);
  });

  it('sent again with its Idempotency-Key, gets its certificate again; without one the token is spent, as on the reference', async () => {
    // Issue 35 item 2: an enrollment whose answer was lost is not left ambiguous. The key is kept per
    // token (the caller has no session): another token's enrollment with the same key is its own.
    const { id, detail } = await identityWith({ ott: true });
    const csr = await makeCsr(`CN=${id}`);
    const key = uniqueName('enroll-key');
    const send = (token: string, k?: string) =>
      e.call('client', {
        method: 'POST',
        path: `/enroll?method=ott&token=${token}`,
        rawBody: csr.csrPem,
        headers: { 'content-type': 'application/x-pem-file', ...(k ? { 'idempotency-key': k } : {}) },
      });
    const first = await send(detail.enrollment.ott.token, key);
    expect(first.status).toBe(200);
    const again = await send(detail.enrollment.ott.token, key);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect((await certLogin(again.text, csr.keyPem)).status).toBe(200);
    const authenticators = await mgmt(`/authenticators?filter=${encodeURIComponent(`identity = "${id}"`)}`);
    expect(authenticators.json.data).toHaveLength(1);
    const spent = await send(detail.enrollment.ott.token);
    expect(spent.status).toBe(400);
    expect(spent.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');

    const other = await identityWith({ ott: true });
    const theirs = await send(other.detail.enrollment.ott.token, key);
    expect(theirs.status).toBe(200);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.text).not.toBe(first.text);
    const theirLogin = await certLogin(theirs.text, csr.keyPem);
    expect(theirLogin.status).toBe(200);
    expect(theirLogin.json.data.identityId).toBe(other.id);
  });

  it('refuses unknown, malformed, wrong-kind and expired tokens and unreadable bodies with their codes', async () => {
    const unknown = await enrollOtt(randomUUID(), 'CN=x');
    expect(unknown.res.status).toBe(400);
    expect(unknown.res.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
    const malformed = await enrollOtt('not-a-uuid', 'CN=x');
    expect(malformed.res.status).toBe(400);
    expect(malformed.res.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'token' } });

    const { detail } = await identityWith({ updb: uniqueName('u') });
    const wrongKind = await e.call('client', {
      method: 'POST',
      path: `/enroll/ott?token=${detail.enrollment.updb.token}`,
      rawBody: (await makeCsr('CN=x')).csrPem,
      headers: { 'content-type': 'application/x-pem-file' },
    });
    expect(wrongKind.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');

    const ott = await identityWith({ ott: true });
    const badType = await e.call('client', {
      method: 'POST',
      path: `/enroll?method=ott&token=${ott.detail.enrollment.ott.token}`,
      rawBody: 'x',
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(badType.status).toBe(400);
    expect(badType.json.error.code).toBe('INVALID_CONTENT_TYPE');
    const badCsr = await e.call('client', {
      method: 'POST',
      path: `/enroll?method=ott&token=${ott.detail.enrollment.ott.token}`,
      rawBody: '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n',
      headers: { 'content-type': 'application/x-pem-file' },
    });
    expect(badCsr.status).toBe(400);
    expect(badCsr.json.error.code).toBe('COULD_NOT_PROCESS_CSR');

    // an enrollment that runs out: refused with ENROLLMENT_EXPIRED (polled, no sleeps)
    const identityId = await e.createIdentity();
    const created = await mgmt('/enrollments', {
      method: 'POST',
      body: { method: 'ott', identityId, expiresAt: new Date(Date.now() + 1500).toISOString() },
    });
    expect(created.status).toBe(201);
    const token = (await mgmt(`/enrollments/${created.json.data.id}`)).json.data.token;
    await waitFor(async () => {
      const r = await e.call('client', {
        method: 'POST',
        path: `/enroll?token=${token}`,
        rawBody: 'not a csr',
        headers: { 'content-type': 'text/plain' },
      });
      return r.json.error.code === 'ENROLLMENT_EXPIRED';
    }, 'the enrollment to expire');
    const expired = await enrollOtt(token, 'CN=late');
    expect(expired.res.status).toBe(400);
    expect(expired.res.json.error.code).toBe('ENROLLMENT_EXPIRED');
  });
});

describe('updb enrollment', () => {
  it('sets the password under the enrollment username (the auth policy rules apply); the password then logs in', async () => {
    const username = uniqueName('updb');
    const { id, detail } = await identityWith({ updb: username });
    const jwt = await verifyEnrollmentJwt(detail.enrollment.updb.jwt, await presentedServerCertificate());
    expect(jwt.claims).toMatchObject({ em: 'updb', sub: id });
    const path = `/enroll/updb?token=${detail.enrollment.updb.token}`;
    const weak = await e.call('client', { method: 'POST', path, body: { password: 'abc' } });
    expect(weak.status).toBe(400);
    expect(weak.json.error.cause.field).toBe('password');
    const done = await e.call('client', {
      method: 'POST',
      path,
      body: { username: 'ignored', password: 'a-secret-pw-1' },
    });
    expect(done.status).toBe(200);
    expect(done.json).toEqual({ data: {}, meta: {} });
    expect((await e.login(username, 'a-secret-pw-1', 'client')).length).toBeGreaterThan(0);
    expect((await mgmt(`/identities/${id}`)).json.data.authenticators.updb).toEqual({
      id: expect.any(String),
      username,
    });
    const reused = await e.call('client', { method: 'POST', path, body: { password: 'a-secret-pw-1' } });
    expect(reused.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
  });
});

describe('/enrollments', () => {
  it('list, create (409 for a second of the same method), detail, refresh, delete and per identity', async () => {
    const identityId = await e.createIdentity();
    const created = await mgmt('/enrollments', {
      method: 'POST',
      body: { method: 'ott', identityId, expiresAt: inMinutes(60) },
    });
    expect(created.status).toBe(201);
    const enrollmentId = created.json.data.id;
    expect(created.json.data._links.self.href).toBe(`./enrollments/${enrollmentId}`);
    const dup = await mgmt('/enrollments', {
      method: 'POST',
      body: { method: 'ott', identityId, expiresAt: inMinutes(60) },
    });
    expect(dup.status).toBe(409);
    expect(dup.json.error).toMatchObject({ code: 'ENROLLMENT_EXISTS', cause: { field: 'method' } });
    const missing = await mgmt('/enrollments', {
      method: 'POST',
      body: { method: 'ott', identityId: 'nobody', expiresAt: inMinutes(60) },
    });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'REFERENCED_ENTITY_NOT_FOUND', cause: { field: 'identityId' } });
    const past = await mgmt('/enrollments', {
      method: 'POST',
      body: { method: 'ott', identityId, expiresAt: inMinutes(-5) },
    });
    expect(past.json.error.cause.field).toBe('expiresAt');

    const detail = (await mgmt(`/enrollments/${enrollmentId}`)).json.data;
    expect(detail).toMatchObject({
      id: enrollmentId,
      method: 'ott',
      identityId,
      identity: { id: identityId, entity: 'identities' },
      caId: null,
    });
    expect((await verifyEnrollmentJwt(detail.jwt, await presentedServerCertificate())).claims.jti).toBe(detail.token);

    const list = await mgmt(`/enrollments?filter=${encodeURIComponent(`identity="${identityId}"`)}`);
    expect(list.json.data.map((x: { id: string }) => x.id)).toEqual([enrollmentId]);
    expect(list.json.meta.pagination.totalCount).toBe(1);
    const perIdentity = await mgmt(`/identities/${identityId}/enrollments`);
    expect(perIdentity.json.data.map((x: { id: string }) => x.id)).toEqual([enrollmentId]);
    expect((await mgmt('/identities/nobody/enrollments')).status).toBe(404);
    expect((await mgmt(`/identities/${identityId}`)).json.data.enrollment.ott.id).toBe(enrollmentId);

    const refreshed = await mgmt(`/enrollments/${enrollmentId}/refresh`, {
      method: 'POST',
      body: { expiresAt: inMinutes(120) },
    });
    expect(refreshed.status).toBe(200);
    const after = (await mgmt(`/enrollments/${enrollmentId}`)).json.data;
    expect(after.token).not.toBe(detail.token);
    expect(after.jwt).not.toBe(detail.jwt);
    expect((await enrollOtt(detail.token, 'CN=old')).res.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');

    expect((await mgmt(`/enrollments/${enrollmentId}`, { method: 'DELETE' })).status).toBe(200);
    expect((await mgmt(`/enrollments/${enrollmentId}`)).status).toBe(404);
    expect((await mgmt(`/enrollments/${enrollmentId}`, { method: 'DELETE' })).status).toBe(404);
    expect((await enrollOtt(after.token, 'CN=gone')).res.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
  });

  it('caller matrix: anonymous and non-admin callers get 401; admins pass', async () => {
    for (const token of [undefined, user.token]) {
      for (const [method, path] of [
        ['GET', '/enrollments'],
        ['POST', '/enrollments'],
        ['GET', '/cas'],
        ['POST', '/cas'],
        ['GET', `/identities/${user.id}/enrollments`],
        ['POST', '/authenticators/x/re-enroll'],
      ] as const) {
        const res = await e.call('management', {
          method,
          path,
          ...(token ? { token } : {}),
          ...(method === 'POST' ? { body: {} } : {}),
        });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
      }
    }
    expect((await mgmt('/enrollments')).status).toBe(200);
    expect((await mgmt('/cas')).status).toBe(200);
    // enroll is open to anyone; session certificates and extension need a session
    expect((await e.call('client', { path: '/enroll/jwks' })).status).toBe(200);
    expect((await e.call('client', { path: '/current-api-session/certificates' })).status).toBe(401);
    expect(
      (
        await e.call('client', {
          method: 'POST',
          path: '/current-identity/authenticators/x/extend',
          body: { clientCertCsr: 'x' },
        })
      ).status,
    ).toBe(401);
  });
});

describe('CAs, ottca and CA auto-enrollment', () => {
  let ca: TestCa;
  let record: { id: string; name: string; verificationToken: string };

  beforeAll(async () => {
    ca = await makeTestCa('E2E Third Party');
  });

  it('create, detail, list, verification with a certificate whose CN is the token, the CA JWT', async () => {
    const notCa = await mgmt('/cas', {
      method: 'POST',
      body: {
        name: uniqueName('ca'),
        certPem: (await ca.issueClient('CN=leaf')).certPem,
        isAutoCaEnrollmentEnabled: false,
        isOttCaEnrollmentEnabled: false,
        isAuthEnabled: false,
        identityRoles: [],
      },
    });
    expect(notCa.status).toBe(400);
    expect(notCa.json.error.code).toBe('CERTIFICATE_IS_NOT_CA');
    const missing = await mgmt('/cas', { method: 'POST', body: { name: 'x' } });
    expect(missing.status).toBe(400);
    expect(missing.json.error.code).toBe('COULD_NOT_VALIDATE');

    record = await createCa(ca, {
      isAutoCaEnrollmentEnabled: true,
      isOttCaEnrollmentEnabled: true,
      isAuthEnabled: true,
      identityRoles: ['devices'],
    });
    const detail = (await mgmt(`/cas/${record.id}`)).json.data;
    expect(detail).toMatchObject({
      isVerified: false,
      fingerprint: parsePemChain(ca.rootPem)[0]!.fingerprint,
      identityNameFormat: '[caName]-[commonName]',
      identityRoles: ['devices'],
      _links: {
        self: { href: `./cas/${record.id}` },
        verify: { href: `./cas/${record.id}/verify` },
        jwt: { href: `./cas/${record.id}/jwt` },
      },
    });
    const dup = await mgmt('/cas', {
      method: 'POST',
      body: {
        name: uniqueName('ca'),
        certPem: ca.rootPem,
        isAutoCaEnrollmentEnabled: false,
        isOttCaEnrollmentEnabled: false,
        isAuthEnabled: false,
        identityRoles: [],
      },
    });
    expect(dup.json.error.cause.field).toBe('certPem');
    const listed = await mgmt(`/cas?filter=${encodeURIComponent(`name="${record.name}"`)}`);
    expect(listed.json.data.map((c: { id: string }) => c.id)).toEqual([record.id]);

    const verify = (rawBody: string) =>
      mgmt(`/cas/${record.id}/verify`, { method: 'POST', rawBody, headers: { 'content-type': 'text/plain' } });
    expect((await verify(await verificationCertificate(ca, 'not-the-token'))).json.error.code).toBe(
      'INVALID_COMMON_NAME',
    );
    const impostor = await makeTestCa('Impostor');
    const wrongSigner = await verify(await verificationCertificate(impostor, record.verificationToken));
    expect(wrongSigner.status).toBe(400);
    expect(wrongSigner.json.error.code).toBe('CERTIFICATE_FAILED_VALIDATION');
    expect((await verify((await makeCsr('CN=x')).csrPem)).json.error.code).toBe('EXPECTED_PEM_CERTIFICATE');
    await verifyCa(ca, record);
    const again = await verify(await verificationCertificate(ca, record.verificationToken));
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('CA_ALREADY_VERIFIED');
    expect((await mgmt(`/cas/${record.id}`)).json.data).toMatchObject({
      isVerified: true,
      _links: { self: expect.anything() },
    });
    expect((await mgmt(`/cas/${record.id}`)).json.data._links.verify).toBeUndefined();

    const jwt = await mgmt(`/cas/${record.id}/jwt`);
    expect(jwt.status).toBe(200);
    expect(jwt.headers['content-type']).toMatch(/^application\/jwt/);
    const { claims } = await verifyEnrollmentJwt(jwt.text, await presentedServerCertificate());
    expect(claims).toEqual({
      iss: `https://localhost:${e.cluster.port}/`,
      sub: record.id,
      jti: record.id,
      em: 'ca',
      ctrls: null,
    });
  });

  it('ottca: the identity enrolls with a TLS client certificate signed by the enrollment CA, then logs in with it', async () => {
    const { id, detail } = await identityWith({ ottca: record.id });
    expect(detail.enrollment.ottca).toMatchObject({
      caId: record.id,
      ca: { id: record.id, name: record.name, entity: 'cas' },
    });
    const path = `/enroll/ottca?token=${detail.enrollment.ottca.token}`;
    const stranger = await (await makeTestCa('Stranger')).issueClient('CN=s');
    const refused = await e.call('client', {
      method: 'POST',
      path,
      body: {},
      cert: stranger.chainPem,
      key: stranger.keyPem,
    });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('CERT_FAILED_VALIDATION');
    const client = await ca.issueClient(`CN=${id}`);
    const ok = await e.call('client', { method: 'POST', path, body: {}, cert: client.chainPem, key: client.keyPem });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({ data: {}, meta: {} });
    const login = await certLogin(client.chainPem, client.keyPem);
    expect(login.status).toBe(200);
    expect(login.json.data.identityId).toBe(id);

    // re-enroll: a certificate that came through a CA goes back to ottca with that CA
    const authenticatorId = (await mgmt(`/identities/${id}`)).json.data.authenticators.cert.id;
    const reEnrolled = await mgmt(`/authenticators/${authenticatorId}/re-enroll`, {
      method: 'POST',
      body: { expiresAt: inMinutes(30) },
    });
    expect(reEnrolled.status).toBe(201);
    expect((await mgmt(`/enrollments/${reEnrolled.json.data.id}`)).json.data).toMatchObject({
      method: 'ottca',
      caId: record.id,
      identityId: id,
    });
    expect((await certLogin(client.chainPem, client.keyPem)).status).toBe(401);
  });

  it('CA auto-enrollment creates an identity named by the CA format with its roles; the certificate then logs in', async () => {
    const cn = uniqueName('device');
    const device = await ca.issueClient(`CN=${cn}`);
    const res = await e.call('client', {
      method: 'POST',
      path: '/enroll?method=ca',
      rawBody: '',
      headers: { 'content-type': 'text/plain' },
      cert: device.chainPem,
      key: device.keyPem,
    });
    expect(res.status).toBe(200);
    const name = `${record.name}-${cn}`;
    const found = await mgmt(`/identities?filter=${encodeURIComponent(`name="${name}"`)}`);
    expect(found.json.data).toHaveLength(1);
    expect(found.json.data[0]).toMatchObject({
      name,
      roleAttributes: ['devices'],
      authenticators: { cert: { fingerprint: parsePemChain(device.certPem)[0]!.fingerprint } },
    });
    const login = await certLogin(device.chainPem, device.keyPem);
    expect(login.status).toBe(200);
    expect(login.json.data.identityId).toBe(found.json.data[0].id);

    const inUse = await e.call('client', {
      method: 'POST',
      path: '/enroll/ca',
      body: {},
      cert: device.chainPem,
      key: device.keyPem,
    });
    expect(inUse.status).toBe(409);
    expect(inUse.json.error.code).toBe('CERT_IN_USE');
    const noCert = await e.call('client', { method: 'POST', path: '/enroll/ca', body: {} });
    expect(noCert.json.error.code).toBe('CERT_FAILED_VALIDATION');
  });

  it('cert login through a verified CA with isAuthEnabled and an externalIdClaim; refused once auth is off', async () => {
    const claimCa = await makeTestCa('Claims');
    const claimRecord = await createCa(claimCa, {
      isAuthEnabled: true,
      externalIdClaim: {
        location: 'SAN_EMAIL',
        matcher: 'SUFFIX',
        matcherCriteria: '@corp.example',
        parser: 'SPLIT',
        parserCriteria: '@',
        index: 0,
      },
    });
    const externalId = uniqueName('ext');
    const identityId = await e.createIdentity({ externalId });
    const client = await claimCa.issueClient('CN=person', {
      sans: [{ type: 'email', value: `${externalId}@corp.example` }],
    });
    expect((await certLogin(client.chainPem, client.keyPem)).status).toBe(401); // not verified yet
    await verifyCa(claimCa, claimRecord);
    const login = await certLogin(client.chainPem, client.keyPem);
    expect(login.status).toBe(200);
    expect(login.json.data.identityId).toBe(identityId);
    const patched = await mgmt(`/cas/${claimRecord.id}`, { method: 'PATCH', body: { isAuthEnabled: false } });
    expect(patched.status).toBe(200);
    const refused = await certLogin(client.chainPem, client.keyPem);
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('INVALID_AUTH');
  });

  it('concurrent PATCHes of different fields of a CA both survive (the row is locked while it changes)', async () => {
    const r = await createCa(await makeTestCa('Locked'), { isAuthEnabled: true });
    for (let i = 0; i < 5; i++) {
      const [a, b] = await Promise.all([
        mgmt(`/cas/${r.id}`, { method: 'PATCH', body: { identityRoles: [`lock${i}`] } }),
        mgmt(`/cas/${r.id}`, { method: 'PATCH', body: { tags: { round: String(i) } } }),
      ]);
      expect([a.status, b.status], `${a.text} ${b.text}`).toEqual([200, 200]);
      const after = (await mgmt(`/cas/${r.id}`)).json.data;
      expect(after.identityRoles).toEqual([`lock${i}`]);
      expect(after.tags).toMatchObject({ round: String(i) });
    }
  });

  it('a verification racing a PATCH keeps both: the CA verified and the patched field (verify locks the row too)', async () => {
    for (let i = 0; i < 5; i++) {
      const ca = await makeTestCa(`Racing${i}`);
      const r = await createCa(ca);
      const proof = await verificationCertificate(ca, r.verificationToken);
      const [verified, patched] = await Promise.all([
        mgmt(`/cas/${r.id}/verify`, { method: 'POST', rawBody: proof, headers: { 'content-type': 'text/plain' } }),
        mgmt(`/cas/${r.id}`, { method: 'PATCH', body: { tags: { round: String(i) }, identityRoles: [`race${i}`] } }),
      ]);
      expect([verified.status, patched.status], `${verified.text} ${patched.text}`).toEqual([200, 200]);
      const after = (await mgmt(`/cas/${r.id}`)).json.data;
      expect(after.isVerified, `round ${i}`).toBe(true);
      expect(after.identityRoles, `round ${i}`).toEqual([`race${i}`]);
      expect(after.tags, `round ${i}`).toMatchObject({ round: String(i) });
    }
  });

  it('PUT replaces, PATCH merges; deleting the CA deletes the certificate authenticators it vouched for', async () => {
    const owned = await makeTestCa('Owned');
    const r = await createCa(owned, { isOttCaEnrollmentEnabled: true, isAuthEnabled: true });
    await verifyCa(owned, r);
    const put = await mgmt(`/cas/${r.id}`, {
      method: 'PUT',
      body: {
        name: r.name,
        identityNameFormat: '[commonName]',
        identityRoles: ['a'],
        isAuthEnabled: true,
        isAutoCaEnrollmentEnabled: false,
        isOttCaEnrollmentEnabled: true,
        tags: { k: 'v' },
      },
    });
    expect(put.status).toBe(200);
    expect((await mgmt(`/cas/${r.id}`)).json.data).toMatchObject({
      identityNameFormat: '[commonName]',
      identityRoles: ['a'],
      tags: { k: 'v' },
      isVerified: true,
    });
    const badPatch = await mgmt(`/cas/${r.id}`, { method: 'PATCH', body: { identityRoles: ['#x'] } });
    expect(badPatch.status).toBe(400);
    expect(badPatch.json.error.cause.field).toBe('identityRoles');

    const { id, detail } = await identityWith({ ottca: r.id });
    const client = await owned.issueClient(`CN=${id}`);
    expect(
      (
        await e.call('client', {
          method: 'POST',
          path: `/enroll?token=${detail.enrollment.ottca.token}`,
          body: {},
          cert: client.chainPem,
          key: client.keyPem,
        })
      ).status,
    ).toBe(200);
    expect((await certLogin(client.chainPem, client.keyPem)).status).toBe(200);
    expect((await mgmt(`/identities/${id}`)).json.data.authenticators.cert).toBeDefined();

    expect((await mgmt(`/cas/${r.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await mgmt(`/cas/${r.id}`)).status).toBe(404);
    await waitFor(
      async () => (await mgmt(`/identities/${id}`)).json.data.authenticators.cert === undefined,
      'the CA authenticator to be deleted',
    );
    expect((await certLogin(client.chainPem, client.keyPem)).status).toBe(401);
  });
});

describe('certificate extension and re-enrollment', () => {
  async function ottIdentity() {
    const { id, detail } = await identityWith({ ott: true });
    const { res, keyPem } = await enrollOtt(detail.enrollment.ott.token, `CN=${id}`);
    expect(res.status).toBe(200);
    const login = await certLogin(res.text, keyPem);
    const authenticatorId = (await mgmt(`/identities/${id}`)).json.data.authenticators.cert.id as string;
    return { id, certPem: res.text, keyPem, token: login.json.data.token as string, authenticatorId };
  }

  it('extend returns a new certificate while the old one stays valid; extend-verify makes only the new one valid', async () => {
    const me = await ottIdentity();
    const csr = await makeCsr(`CN=${me.id}`);
    const path = `/current-identity/authenticators/${me.authenticatorId}/extend`;
    const noCert = await e.call('client', {
      method: 'POST',
      path,
      token: me.token,
      body: { clientCertCsr: csr.csrPem },
    });
    expect(noCert.status).toBe(401);
    const extended = await e.call('client', {
      method: 'POST',
      path,
      token: me.token,
      body: { clientCertCsr: csr.csrPem },
      cert: me.certPem,
      key: me.keyPem,
    });
    expect(extended.status).toBe(200);
    const { clientCert, ca } = extended.json.data;
    await verifyChain(clientCert, [], e.caPems, { usage: 'clientAuth' });
    expect(ca).toBe(e.caPems.join(''));
    expect((await certLogin(me.certPem, me.keyPem)).status).toBe(200); // old still valid
    expect((await certLogin(clientCert, csr.keyPem)).status).toBe(401); // new not yet

    const verifyPath = `/current-identity/authenticators/${me.authenticatorId}/extend-verify`;
    const wrong = await e.call('management', {
      method: 'POST',
      path: verifyPath,
      token: me.token,
      body: { clientCert: me.certPem },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error.code).toBe('INVALID_CLIENT_CERT');
    const verified = await e.call('management', {
      method: 'POST',
      path: verifyPath,
      token: me.token,
      body: { clientCert },
    });
    expect(verified.status).toBe(200);
    expect((await certLogin(clientCert, csr.keyPem)).status).toBe(200);
    expect((await certLogin(me.certPem, me.keyPem)).status).toBe(401);
    expect((await mgmt(`/authenticators/${me.authenticatorId}`)).json.data.fingerprint).toBe(
      parsePemChain(clientCert)[0]!.fingerprint,
    );
  });

  it("another identity's authenticator cannot be extended; a password authenticator cannot be extended", async () => {
    const me = await ottIdentity();
    const other = await ottIdentity();
    const csr = (await makeCsr('CN=x')).csrPem;
    const foreign = await e.call('client', {
      method: 'POST',
      path: `/current-identity/authenticators/${other.authenticatorId}/extend`,
      token: me.token,
      body: { clientCertCsr: csr },
      cert: me.certPem,
      key: me.keyPem,
    });
    expect(foreign.status).toBe(404);
    const updb = await e.call('client', {
      method: 'POST',
      path: `/current-identity/authenticators/${user.authenticatorId}/extend`,
      token: user.token,
      body: { clientCertCsr: csr },
      cert: me.certPem,
      key: me.keyPem,
    });
    expect(updb.status).toBe(409);
    expect(updb.json.error.code).toBe('CAN_NOT_UPDATE_AUTHENTICATOR');
  });

  it('re-enroll replaces the authenticator with an enrollment of its kind: cert → ott, updb → updb', async () => {
    const me = await ottIdentity();
    const res = await mgmt(`/authenticators/${me.authenticatorId}/re-enroll`, {
      method: 'POST',
      body: { expiresAt: inMinutes(30) },
    });
    expect(res.status).toBe(201);
    const enrollmentId = res.json.data.id;
    expect(res.json.data._links.self.href).toBe(`./enrollments/${enrollmentId}`);
    expect((await mgmt(`/enrollments/${enrollmentId}`)).json.data).toMatchObject({ method: 'ott', identityId: me.id });
    expect((await mgmt(`/authenticators/${me.authenticatorId}`)).status).toBe(404);
    expect((await certLogin(me.certPem, me.keyPem)).status).toBe(401);
    expect((await mgmt(`/identities/${me.id}`)).json.data.enrollment.ott.id).toBe(enrollmentId);

    const pw = await e.createUser();
    const updb = await mgmt(`/authenticators/${pw.authenticatorId}/re-enroll`, {
      method: 'POST',
      body: { expiresAt: inMinutes(30) },
    });
    expect(updb.status).toBe(201);
    expect((await mgmt(`/enrollments/${updb.json.data.id}`)).json.data).toMatchObject({
      method: 'updb',
      username: pw.username,
    });
    expect(
      (await mgmt('/authenticators/nope/re-enroll', { method: 'POST', body: { expiresAt: inMinutes(30) } })).status,
    ).toBe(404);
  });
});

describe('API session certificates', () => {
  it('list, create from a CSR (12 hours, for this session), detail, delete; gone at logout', async () => {
    const token = await e.login(user.username, user.password, 'client');
    const csr = await makeCsr('CN=ephemeral');
    const created = await e.call('client', {
      method: 'POST',
      path: '/current-api-session/certificates',
      token,
      body: { csr: csr.csrPem },
    });
    expect(created.status).toBe(201);
    const { id, certificate, cas } = created.json.data;
    expect(created.json.data._links.self.href).toBe(`./current-api-session/certificates/${id}`);
    expect(cas).toBe(e.caPems.join(''));
    await verifyChain(certificate, [], e.caPems, { usage: 'clientAuth' });
    const leaf = parsePemChain(certificate)[0]!;
    expect(leaf.notAfter.getTime() - Date.now()).toBeLessThanOrEqual(12 * 3_600_000);

    const list = await e.call('client', { path: '/current-api-session/certificates', token });
    expect(list.json.data.map((c: { id: string }) => c.id)).toEqual([id]);
    const detail = await e.call('client', { path: `/current-api-session/certificates/${id}`, token });
    expect(detail.json.data).toMatchObject({ id, fingerprint: leaf.fingerprint, subject: 'CN=ephemeral', certificate });
    // another session of the same identity does not see it
    expect(
      (await e.call('client', { path: `/current-api-session/certificates/${id}`, token: user.token })).status,
    ).toBe(404);
    const bad = await e.call('client', {
      method: 'POST',
      path: '/current-api-session/certificates',
      token,
      body: { csr: 'nope' },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('COULD_NOT_PROCESS_CSR');
    const missing = await e.call('client', {
      method: 'POST',
      path: '/current-api-session/certificates',
      token,
      body: {},
    });
    expect(missing.json.error.cause.field).toBe('csr');

    const second = await e.call('client', {
      method: 'POST',
      path: '/current-api-session/certificates',
      token,
      body: { csr: (await makeCsr('CN=two')).csrPem },
    });
    expect(
      (
        await e.call('client', {
          method: 'DELETE',
          path: `/current-api-session/certificates/${second.json.data.id}`,
          token,
        })
      ).status,
    ).toBe(200);
    expect(
      (await e.call('client', { path: `/current-api-session/certificates/${second.json.data.id}`, token })).status,
    ).toBe(404);

    expect((await e.call('client', { method: 'DELETE', path: '/current-api-session', token })).status).toBe(200);
    const db = new pg.Client({ connectionString: e.cluster.databases['pki-enrollment'] });
    await db.connect();
    try {
      await waitFor(
        async () => (await db.query('select 1 from api_session_certificates where id = $1', [id])).rowCount === 0,
        'the certificate to go with the session',
      );
    } finally {
      await db.end();
    }
  });
});
