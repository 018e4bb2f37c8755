import { randomUUID } from 'node:crypto';
import { ApiError } from '@ziti/contracts';
import { type Database, SecretBox, createUnitOfWork, migrate, openDatabase, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/infra.ts';
import { migrations } from '../src/app.ts';
import { CaService } from '../src/cas/cas.domain.ts';
import { ControllerPkiService } from '../src/controller-pki/controller-pki.domain.ts';
import { EnrollService } from '../src/enrollments/enroll.domain.ts';
import { EnrollmentJwtIssuer } from '../src/enrollments/enrollment-jwt.domain.ts';
import { EnrollmentService } from '../src/enrollments/enrollments.domain.ts';
import { ExtensionService } from '../src/authenticators/extensions.domain.ts';
import type { PkiStores } from '../src/shared/stores.ports.ts';
import { SessionCertificateService } from '../src/session-certificates/session-certificates.domain.ts';
import { parsePemChain, signCsr, verifyChain, verifyEnrollmentJwt } from '@ziti/x509';
import { PgPkiMaterialStore } from '../src/controller-pki/pki-material.store.ts';
import { PgCaStore } from '../src/cas/cas.store.ts';
import { PgEnrollmentStore } from '../src/enrollments/enrollments.store.ts';
import { PgSessionCertificateStore } from '../src/session-certificates/session-certificates.store.ts';
import { FakeCredentials } from './fake-credentials.ts';
import { type TestCa, makeCsr, makeTestCa, verificationCertificate } from './support.ts';

/**
 * pki-enrollment's domain on a real Postgres database: the stores, the controller PKI and every
 * flow, with auth's credential calls faked in memory (the real calls run in the e2e suite).
 */
let drop: () => Promise<void>;
let database: Database;
let clock = new Date();
const now = () => clock;
const credentials = new FakeCredentials();
let pki: ControllerPkiService;
let cas: CaService;
let enrollments: EnrollmentService;
let enroll: EnrollService;
let extensions: ExtensionService;
let sessionCerts: SessionCertificateService;
const address = 'ctrl.example.test:1280';

beforeAll(async () => {
  const db = await createTestDatabase('pki');
  drop = db.drop;
  database = await openDatabase({ url: db.url });
  await migrate(database, migrations);
  const box = new SecretBox(SecretBox.generateSecret());
  pki = new ControllerPkiService(new PgPkiMaterialStore(database.db), box, { advertisedAddress: address });
  await pki.initialize();
  const work = createUnitOfWork<PkiStores>(database, undefined, 'pki-enrollment', (tx, events) => ({
    cas: new PgCaStore(tx),
    enrollments: new PgEnrollmentStore(tx, box, events),
    sessionCertificates: new PgSessionCertificateStore(tx, now),
    events,
  }));
  const jwts = new EnrollmentJwtIssuer(pki, address);
  cas = new CaService(work, jwts, pki, now);
  enrollments = new EnrollmentService(work, jwts, credentials, { durationMinutes: 180 }, now);
  enroll = new EnrollService(work, pki, cas, credentials, { identityCertDays: 365 }, now);
  extensions = new ExtensionService(work, pki, cas, enrollments, credentials, { identityCertDays: 365 }, now);
  sessionCerts = new SessionCertificateService(work, pki, now);
});

afterAll(async () => {
  await database?.close();
  await drop?.();
});

async function rejects(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

let seq = 0;
function newIdentity(): string {
  const id = `ident${++seq}${randomUUID().slice(0, 4)}`;
  credentials.addIdentity(id, `name-${id}`);
  return id;
}

const inHours = (h: number) => new Date(clock.getTime() + h * 3_600_000).toISOString();

async function verifiedCa(
  name: string,
  flags: { auto?: boolean; ott?: boolean; auth?: boolean; roles?: string[]; format?: string } = {},
) {
  const ca = await makeTestCa(name);
  const created = await cas.create({
    name: `${name}-${randomUUID().slice(0, 6)}`,
    certPem: ca.rootPem,
    isAutoCaEnrollmentEnabled: flags.auto ?? false,
    isOttCaEnrollmentEnabled: flags.ott ?? false,
    isAuthEnabled: flags.auth ?? false,
    identityRoles: flags.roles ?? [],
    ...(flags.format ? { identityNameFormat: flags.format } : {}),
  });
  await cas.verify(created.id, await verificationCertificate(ca, created.verificationToken));
  return { ca, record: await cas.get(created.id) };
}

describe('enrollment records', () => {
  it('issues a JWT the SDK accepts: signed with the TLS key, kid = SHA-1 of the server certificate, §8.1 claims', async () => {
    const identityId = newIdentity();
    const created = await enrollments.create({ method: 'ott', identityId, expiresAt: inHours(2) });
    const e = await enrollments.get(created.id);
    const server = pki.serverIdentity();
    const verified = await verifyEnrollmentJwt(e.jwt, server.certChainPem);
    expect(verified.header).toMatchObject({
      alg: 'ES256',
      typ: 'JWT',
      kid: parsePemChain(server.certChainPem)[0]!.fingerprint,
    });
    expect(verified.claims).toEqual({
      iss: `https://${address}`,
      sub: identityId,
      aud: [''],
      exp: Math.floor(e.expiresAt.getTime() / 1000),
      jti: e.token,
      em: 'ott',
      ctrls: null,
    });
    expect(e.token).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('keeps the token and the JWT encrypted at rest, looked up by hash', async () => {
    const e = await enrollments.create({ method: 'ott', identityId: newIdentity(), expiresAt: inHours(1) });
    const [row] = await queryRows<Record<string, string>>(database.db, 'select * from enrollments where id = $1', [
      e.id,
    ]);
    expect(JSON.stringify(row)).not.toContain(e.token);
    expect(row!.token_encrypted).toMatch(/^v1\./);
    expect(row!.jwt_encrypted).toMatch(/^v1\./);
  });

  it('allows one enrollment per method and identity (ENROLLMENT_EXISTS), others beside it', async () => {
    const identityId = newIdentity();
    await enrollments.create({ method: 'ott', identityId, expiresAt: inHours(1) });
    const err = await rejects(enrollments.create({ method: 'ott', identityId, expiresAt: inHours(1) }));
    expect(err.code).toBe('ENROLLMENT_EXISTS');
    expect(err.cause).toMatchObject({ field: 'method', reason: 'enrollment of same method exists' });
    await enrollments.create({ method: 'updb', identityId, username: `u-${identityId}`, expiresAt: inHours(1) });
    expect((await enrollments.list({}, identityId)).items.map((e) => e.method).sort()).toEqual(['ott', 'updb']);
  });

  it('refuses unknown references and bad expiries with field errors', async () => {
    expect(
      await rejects(enrollments.create({ method: 'ott', identityId: 'nobody', expiresAt: inHours(1) })),
    ).toMatchObject({
      code: 'REFERENCED_ENTITY_NOT_FOUND',
      cause: { field: 'identityId' },
    });
    expect(
      await rejects(
        enrollments.create({ method: 'ottca', identityId: newIdentity(), caId: 'nope', expiresAt: inHours(1) }),
      ),
    ).toMatchObject({
      code: 'REFERENCED_ENTITY_NOT_FOUND',
      cause: { field: 'caId' },
    });
    expect(
      await rejects(enrollments.create({ method: 'ott', identityId: newIdentity(), expiresAt: inHours(-1) })),
    ).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'expiresAt' },
    });
    expect(
      await rejects(enrollments.create({ method: 'updb', identityId: newIdentity(), expiresAt: inHours(1) })),
    ).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'username' },
    });
  });

  it('refresh issues a new token and JWT; the old token stops working', async () => {
    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ott', identityId, expiresAt: inHours(1) });
    const refreshed = await enrollments.refresh(e.id, inHours(5));
    expect(refreshed.token).not.toBe(e.token);
    expect(refreshed.jwt).not.toBe(e.jwt);
    expect((await verifyEnrollmentJwt(refreshed.jwt, pki.serverIdentity().certChainPem)).claims.jti).toBe(
      refreshed.token,
    );
    const csr = await makeCsr(`CN=${identityId}`);
    expect(
      (await rejects(enroll.enrollWithToken({ token: e.token, csrPem: csr.csrPem, clientCertChain: [] }))).code,
    ).toBe('INVALID_ENROLLMENT_TOKEN');
    expect(
      (await enroll.enrollWithToken({ token: refreshed.token, csrPem: csr.csrPem, clientCertChain: [] })).kind,
    ).toBe('certificate');
  });

  it('answers the pending enrollments of identities (identity detail)', async () => {
    const a = newIdentity();
    const b = newIdentity();
    const ids = await enrollments.createForIdentity(a, [{ method: 'ott' }]);
    await enrollments.createForIdentity(b, [{ method: 'updb', username: `user-${b}` }]);
    const pending = await enrollments.pendingFor([a, b, 'other']);
    expect(pending[a]).toEqual([expect.objectContaining({ id: ids[0], method: 'ott', caId: null })]);
    expect(pending[b]![0]!.method).toBe('updb');
    expect(pending.other).toBeUndefined();
    expect(new Date(pending[a]![0]!.expiresAt).getTime() - clock.getTime()).toBeCloseTo(180 * 60_000, -3);
    expect(await enrollments.deleteForIdentity(a, ids)).toEqual(ids);
    expect((await enrollments.pendingFor([a]))[a]).toBeUndefined();
  });
});

describe('ott enrollment', () => {
  it('signs the CSR for a year, chaining to the served CA bundle, and creates the cert authenticator', async () => {
    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ott', identityId, expiresAt: inHours(1) });
    const csr = await makeCsr(`C=US, O=NetFoundry, CN=${identityId}`);
    const result = await enroll.enrollWithToken({ token: e.token, csrPem: csr.csrPem, clientCertChain: [] }, 'ott');
    if (result.kind !== 'certificate') throw new Error('expected a certificate');
    const leaf = parsePemChain(result.certPem)[0]!;
    expect(leaf.subject).toBe(`C=US, O=NetFoundry, CN=${identityId}`);
    expect(leaf.notAfter.getTime() - clock.getTime()).toBeGreaterThan(364 * 86_400_000);
    await verifyChain(result.certPem, [], [pki.serverIdentity().caBundlePem], { usage: 'clientAuth' });
    expect(parsePemChain(result.chainPem)).toHaveLength(2); // leaf + intermediate, no root
    const authenticator = [...credentials.authenticators.values()].find((a) => a.identityId === identityId)!;
    expect(authenticator).toMatchObject({ method: 'cert', certFingerprint: leaf.fingerprint });
    // a used token is gone
    expect(
      (await rejects(enroll.enrollWithToken({ token: e.token, csrPem: csr.csrPem, clientCertChain: [] }))).code,
    ).toBe('INVALID_ENROLLMENT_TOKEN');
  });

  it('lets exactly one of two concurrent uses of a token win', async () => {
    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ott', identityId, expiresAt: inHours(1) });
    const [a, b] = await Promise.all([makeCsr('CN=a'), makeCsr('CN=b')]);
    const outcomes = await Promise.allSettled([
      enroll.enrollWithToken({ token: e.token, csrPem: a.csrPem, clientCertChain: [] }),
      enroll.enrollWithToken({ token: e.token, csrPem: b.csrPem, clientCertChain: [] }),
    ]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const failed = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect((failed.reason as ApiError).code).toBe('INVALID_ENROLLMENT_TOKEN');
  });

  it('refuses expired, malformed and other-method tokens; a failed attempt keeps the enrollment', async () => {
    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ott', identityId, expiresAt: inHours(1) });
    const csr = await makeCsr('CN=x');
    expect(await rejects(enroll.enrollWithToken({ token: 'not-a-uuid', clientCertChain: [] }))).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'token' },
    });
    expect(
      (await rejects(enroll.enrollWithToken({ token: e.token, csrPem: csr.csrPem, clientCertChain: [] }, 'updb'))).code,
    ).toBe('INVALID_ENROLLMENT_TOKEN');
    expect(
      (await rejects(enroll.enrollWithToken({ token: e.token, csrPem: 'garbage', clientCertChain: [] }))).code,
    ).toBe('COULD_NOT_PROCESS_CSR');
    credentials.failNext = new ApiError('SERVICE_UNAVAILABLE');
    expect(
      (await rejects(enroll.enrollWithToken({ token: e.token, csrPem: csr.csrPem, clientCertChain: [] }))).code,
    ).toBe('SERVICE_UNAVAILABLE');
    expect(await enrollments.get(e.id)).toMatchObject({ token: e.token });
    const saved = clock;
    clock = new Date(clock.getTime() + 2 * 3_600_000);
    try {
      expect(
        (await rejects(enroll.enrollWithToken({ token: e.token, csrPem: csr.csrPem, clientCertChain: [] }))).code,
      ).toBe('ENROLLMENT_EXPIRED');
    } finally {
      clock = saved;
    }
  });
});

describe('updb enrollment', () => {
  it('sets the password under the enrollment username; the body username is ignored', async () => {
    const identityId = newIdentity();
    const e = await enrollments.create({
      method: 'updb',
      identityId,
      username: `user-${identityId}`,
      expiresAt: inHours(1),
    });
    expect((await rejects(enroll.enrollWithToken({ token: e.token, clientCertChain: [] }, 'updb'))).cause?.field).toBe(
      'password',
    );
    await enroll.enrollWithToken(
      { token: e.token, password: 'a-Good-password-1', body: { username: 'other' }, clientCertChain: [] },
      'updb',
    );
    const a = [...credentials.authenticators.values()].find((x) => x.identityId === identityId)!;
    expect(a).toMatchObject({ method: 'updb', username: `user-${identityId}`, password: 'a-Good-password-1' });
  });
});

describe('CAs', () => {
  let ca: TestCa;
  beforeAll(async () => {
    ca = await makeTestCa('Third Party');
  });

  it('create validates the certificate and names; verify proves possession of the key', async () => {
    const leaf = await ca.issueClient('CN=not-a-ca');
    expect(await rejects(cas.create({ name: 'x', certPem: leaf.certPem }))).toMatchObject({
      code: 'CERTIFICATE_IS_NOT_CA',
      cause: { field: 'certPem' },
    });
    expect((await rejects(cas.create({ name: 'x', certPem: 'nope' }))).cause?.field).toBe('certPem');
    expect((await rejects(cas.create({ name: 'x', certPem: ca.rootPem, identityRoles: ['#bad'] }))).cause?.field).toBe(
      'identityRoles',
    );
    const created = await cas.create({
      name: `tp-${randomUUID()}`,
      certPem: ca.rootPem,
      identityRoles: ['b', 'a', 'b'],
    });
    expect(created).toMatchObject({
      isVerified: false,
      identityNameFormat: '[caName]-[commonName]',
      identityRoles: ['a', 'b'],
    });
    expect(created.verificationToken).toMatch(/^[0-9A-Za-z]{9}$/);
    expect(await rejects(cas.create({ name: `other-${randomUUID()}`, certPem: ca.rootPem }))).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'certPem' },
    });
    expect(
      await rejects(cas.create({ name: created.name, certPem: (await makeTestCa('Other')).rootPem })),
    ).toMatchObject({ cause: { field: 'name' } });

    const other = await makeTestCa('Impostor');
    expect((await rejects(cas.verify(created.id, await verificationCertificate(ca, 'wrong-token')))).code).toBe(
      'INVALID_COMMON_NAME',
    );
    expect(
      (await rejects(cas.verify(created.id, await verificationCertificate(other, created.verificationToken)))).code,
    ).toBe('CERTIFICATE_FAILED_VALIDATION');
    expect((await rejects(cas.verify(created.id, (await makeCsr('CN=x')).csrPem))).code).toBe(
      'EXPECTED_PEM_CERTIFICATE',
    );
    expect((await rejects(cas.verify(created.id, 'not pem at all'))).code).toBe('COULD_NOT_PARSE_PEM_BLOCK');
    await cas.verify(created.id, await verificationCertificate(ca, created.verificationToken));
    expect((await cas.get(created.id)).isVerified).toBe(true);
    expect(
      (await rejects(cas.verify(created.id, await verificationCertificate(ca, created.verificationToken)))).code,
    ).toBe('CA_ALREADY_VERIFIED');

    const events = await queryRows<{ type: string; payload: { id: string } }>(
      database.db,
      'select type, payload from outbox order by id',
    );
    expect(events.filter((e) => e.payload.id === created.id).map((e) => e.type)).toEqual(['ca.created', 'ca.updated']);
  });

  it('patch merges, put replaces, delete emits ca.deleted and takes the ottca enrollments', async () => {
    const { record } = await verifiedCa('Lifecycle', { ott: true });
    await cas.update(
      record.id,
      {
        isAuthEnabled: true,
        externalIdClaim: {
          location: 'COMMON_NAME',
          matcher: 'ALL',
          matcherCriteria: '',
          parser: 'NONE',
          parserCriteria: '',
          index: 0,
        },
      },
      'patch',
    );
    await cas.update(record.id, { externalIdClaim: { index: 0, parser: 'SPLIT', parserCriteria: '@' } }, 'patch');
    const patched = await cas.get(record.id);
    expect(patched).toMatchObject({
      isAuthEnabled: true,
      isOttCaEnrollmentEnabled: true,
      externalIdClaim: { parser: 'SPLIT', parserCriteria: '@', location: 'COMMON_NAME' },
    });
    expect(
      (await rejects(cas.update(record.id, { externalIdClaim: { matcher: 'SCHEME' } }, 'patch'))).cause?.field,
    ).toBe('externalIdClaim.matcher');
    await cas.update(
      record.id,
      {
        name: record.name,
        isAuthEnabled: false,
        isAutoCaEnrollmentEnabled: true,
        isOttCaEnrollmentEnabled: true,
        identityRoles: [],
        identityNameFormat: '[commonName]',
      },
      'replace',
    );
    expect(await cas.get(record.id)).toMatchObject({
      isAuthEnabled: false,
      externalIdClaim: null,
      identityNameFormat: '[commonName]',
      isVerified: true,
    });
    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ottca', identityId, caId: record.id, expiresAt: inHours(1) });
    await cas.delete(record.id);
    expect((await rejects(cas.get(record.id))).code).toBe('NOT_FOUND');
    expect((await rejects(enrollments.get(e.id))).code).toBe('NOT_FOUND');
    const [deleted] = await queryRows<{ payload: { id: string; certPem: string } }>(
      database.db,
      "select payload from outbox where type = 'ca.deleted' and payload->>'id' = $1",
      [record.id],
    );
    expect(deleted!.payload.certPem).toContain('BEGIN CERTIFICATE');
    // The enrollments the CA takes with it are announced, so auth's read model of outstanding
    // enrollments lets them go too.
    const gone = await queryRows<{ id: string }>(
      database.db,
      "select payload->>'id' as id from outbox where type = 'enrollment.deleted' and payload->>'id' = $1",
      [e.id],
    );
    expect(gone).toEqual([{ id: e.id }]);
  });

  it('the CA JWT carries em=ca, sub=jti=caId, iss with a trailing slash, no exp or aud', async () => {
    const { record } = await verifiedCa('Jwt');
    const jwt = await cas.jwt(record.id);
    const { claims } = await verifyEnrollmentJwt(jwt, pki.serverIdentity().certChainPem);
    expect(claims).toEqual({ iss: `https://${address}/`, sub: record.id, jti: record.id, em: 'ca', ctrls: null });
  });

  it('tells whom a client certificate belongs to (method=cert)', async () => {
    const { ca: authCa, record } = await verifiedCa('Auth', { auth: true });
    await cas.update(
      record.id,
      {
        externalIdClaim: {
          location: 'COMMON_NAME',
          matcher: 'PREFIX',
          matcherCriteria: 'ext-',
          parser: 'NONE',
          parserCriteria: '',
          index: 0,
        },
      },
      'patch',
    );
    const client = await authCa.issueClient('CN=ext-42');
    expect(await cas.verifyClientCertificate([client.certPem, authCa.intermediatePem])).toMatchObject({
      trusted: true,
      issuer: 'ca',
      caId: record.id,
      isAuthEnabled: true,
      externalId: 'ext-42',
      expired: false,
    });
    const plain = await authCa.issueClient('CN=nobody');
    expect((await cas.verifyClientCertificate([plain.chainPem])).externalId).toBeNull();

    const { ca: noAuth } = await verifiedCa('NoAuth', { auth: false });
    expect(await cas.verifyClientCertificate([(await noAuth.issueClient('CN=x')).chainPem])).toMatchObject({
      trusted: false,
    });
    const unverified = await makeTestCa('Unverified');
    await cas.create({
      name: `unverified-${randomUUID()}`,
      certPem: unverified.rootPem,
      isAuthEnabled: true,
      isAutoCaEnrollmentEnabled: false,
      isOttCaEnrollmentEnabled: false,
      identityRoles: [],
    });
    expect((await cas.verifyClientCertificate([(await unverified.issueClient('CN=x')).chainPem])).trusted).toBe(false);

    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ott', identityId, expiresAt: inHours(1) });
    const issued = await enroll.enrollWithToken({
      token: e.token,
      csrPem: (await makeCsr(`CN=${identityId}`)).csrPem,
      clientCertChain: [],
    });
    if (issued.kind !== 'certificate') throw new Error('expected a certificate');
    expect(await cas.verifyClientCertificate([issued.chainPem])).toMatchObject({
      trusted: true,
      issuer: 'controller',
      expired: false,
    });
    expect(await cas.verifyClientCertificate(['garbage'])).toEqual({ trusted: false, fingerprint: '' });
  });

  it('reports a certificate that verifies only inside its validity as expired', async () => {
    const old = await makeTestCa('Old', new Date(Date.now() - 90 * 86_400_000));
    const created = await cas.create({
      name: `old-${randomUUID()}`,
      certPem: old.rootPem,
      isAuthEnabled: true,
      isAutoCaEnrollmentEnabled: false,
      isOttCaEnrollmentEnabled: false,
      identityRoles: [],
    });
    await cas.verify(created.id, await verificationCertificate(old, created.verificationToken));
    const expired = await old.issueClient('CN=expired', {
      validityDays: 10,
      now: new Date(Date.now() - 60 * 86_400_000),
    });
    expect(await cas.verifyClientCertificate([expired.chainPem])).toMatchObject({
      trusted: true,
      caId: created.id,
      expired: true,
    });
  });
});

describe('ottca and CA auto-enrollment', () => {
  it('ottca needs a certificate of the enrollment CA, which must allow OTT-CA', async () => {
    const { ca, record } = await verifiedCa('Ottca', { ott: false });
    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ottca', identityId, caId: record.id, expiresAt: inHours(1) });
    const client = await ca.issueClient(`CN=${identityId}`);
    expect(
      (await rejects(enroll.enrollWithToken({ token: e.token, clientCertChain: [client.certPem, ca.intermediatePem] })))
        .code,
    ).toBe('ENROLLMENT_CA_NOT_VALID');
    await cas.update(record.id, { isOttCaEnrollmentEnabled: true }, 'patch');
    expect((await rejects(enroll.enrollWithToken({ token: e.token, clientCertChain: [] }))).code).toBe(
      'CERT_FAILED_VALIDATION',
    );
    const stranger = await (await makeTestCa('Stranger')).issueClient('CN=s');
    expect((await rejects(enroll.enrollWithToken({ token: e.token, clientCertChain: [stranger.chainPem] }))).code).toBe(
      'CERT_FAILED_VALIDATION',
    );
    expect(
      (await enroll.enrollWithToken({ token: e.token, clientCertChain: [client.certPem, ca.intermediatePem] }, 'ottca'))
        .kind,
    ).toBe('empty');
    const a = [...credentials.authenticators.values()].find((x) => x.identityId === identityId)!;
    expect(a).toMatchObject({ method: 'cert', caId: record.id, certPem: parsePemChain(client.certPem)[0]!.pem });
  });

  it('CA auto-enrollment names the identity by the format, with the CA roles, or by its external id', async () => {
    const early = await (await makeTestCa('Early')).issueClient('CN=early');
    expect((await rejects(enroll.enrollWithCa({ clientCertChain: [early.chainPem] }))).code).toBe(
      'ENROLLMENT_NO_VALID_CAS',
    );
    const { ca, record } = await verifiedCa('Auto', {
      auto: true,
      roles: ['iot', 'sensors'],
      format: '[caName]/[commonName]/[requestedName]',
    });
    const device = await ca.issueClient('CN=device-1');
    expect((await enroll.enrollWithCa({ clientCertChain: [device.chainPem], requestedName: 'kitchen' })).kind).toBe(
      'empty',
    );
    const created = credentials.createdIdentities.at(-1)!;
    expect(created).toMatchObject({
      name: `${record.name}/device-1/kitchen`,
      roleAttributes: ['iot', 'sensors'],
      caId: record.id,
    });
    expect(created.certPem).toBe(parsePemChain(device.certPem)[0]!.pem);
    // same certificate again: in use
    expect(
      (await rejects(enroll.enrollWithCa({ clientCertChain: [device.chainPem], requestedName: 'kitchen' }))).code,
    ).toBe('CERT_IN_USE');
    // a second device with the same CN gets a counter
    await enroll.enrollWithCa({
      clientCertChain: [(await ca.issueClient('CN=device-1')).chainPem],
      requestedName: 'kitchen',
    });
    expect(credentials.createdIdentities.at(-1)!.finalName).toBe(`${record.name}/device-1/kitchen000001`);

    await cas.update(
      record.id,
      {
        externalIdClaim: {
          location: 'COMMON_NAME',
          matcher: 'PREFIX',
          matcherCriteria: 'ext:',
          parser: 'SPLIT',
          parserCriteria: ':',
          index: 1,
        },
      },
      'patch',
    );
    await enroll.enrollWithCa({ clientCertChain: [(await ca.issueClient('CN=ext:abc')).chainPem] });
    expect(credentials.createdIdentities.at(-1)).toMatchObject({ externalId: 'abc' });
    expect(credentials.createdIdentities.at(-1)!.certPem).toBeUndefined();
    expect(
      (await rejects(enroll.enrollWithCa({ clientCertChain: [(await ca.issueClient('CN=plain')).chainPem] }))).code,
    ).toBe('MISSING_CERT_CLAIM');
    expect((await rejects(enroll.enrollWithCa({ clientCertChain: [] }))).code).toBe('CERT_FAILED_VALIDATION');
    expect(
      (
        await rejects(
          enroll.enrollWithCa({ clientCertChain: [(await (await makeTestCa('Nobody')).issueClient('CN=n')).chainPem] }),
        )
      ).code,
    ).toBe('CERT_FAILED_VALIDATION');
  });
});

describe('certificate extension and re-enrollment', () => {
  async function ottEnrolled() {
    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ott', identityId, expiresAt: inHours(1) });
    const result = await enroll.enrollWithToken({
      token: e.token,
      csrPem: (await makeCsr(`CN=${identityId}`)).csrPem,
      clientCertChain: [],
    });
    if (result.kind !== 'certificate') throw new Error('expected a certificate');
    const authenticator = [...credentials.authenticators.values()].find((a) => a.identityId === identityId)!;
    return { identityId, certPem: result.certPem, authenticator };
  }

  it('extend needs the current certificate on TLS; the new one replaces it only once verified', async () => {
    const { identityId, certPem, authenticator } = await ottEnrolled();
    const csr = await makeCsr(`CN=${identityId}`);
    const input = { identityId, authenticatorId: authenticator.id, csrPem: csr.csrPem };
    expect((await rejects(extensions.extend({ ...input, clientCertChain: [] }))).code).toBe('UNAUTHORIZED');
    const other = await ottEnrolled();
    expect((await rejects(extensions.extend({ ...input, clientCertChain: [other.certPem] }))).code).toBe(
      'UNAUTHORIZED',
    );
    expect(
      (await rejects(extensions.extend({ ...input, identityId: other.identityId, clientCertChain: [other.certPem] })))
        .code,
    ).toBe('NOT_FOUND');

    const extended = await extensions.extend({ ...input, clientCertChain: [certPem] });
    expect(extended.ca).toBe(pki.serverIdentity().caBundlePem);
    const staged = await credentials.getAuthenticator(authenticator.id);
    expect(staged.certPem).toBe(certPem); // the old one is still the valid one
    expect(staged.unverifiedCertFingerprint).toBe(parsePemChain(extended.clientCert)[0]!.fingerprint);

    expect(
      (
        await rejects(
          extensions.verifyExtension({ identityId, authenticatorId: authenticator.id, clientCertPem: certPem }),
        )
      ).code,
    ).toBe('INVALID_CLIENT_CERT');
    await extensions.verifyExtension({
      identityId,
      authenticatorId: authenticator.id,
      clientCertPem: extended.clientCert,
    });
    const replaced = await credentials.getAuthenticator(authenticator.id);
    expect(replaced).toMatchObject({ certPem: extended.clientCert, unverifiedCertPem: null });
    expect(
      (
        await rejects(
          extensions.verifyExtension({
            identityId,
            authenticatorId: authenticator.id,
            clientCertPem: extended.clientCert,
          }),
        )
      ).code,
    ).toBe('CAN_NOT_UPDATE_AUTHENTICATOR');
  });

  it('only controller-issued certificates are extended', async () => {
    const { ca, record } = await verifiedCa('NoExtend', { ott: true });
    const identityId = newIdentity();
    const e = await enrollments.create({ method: 'ottca', identityId, caId: record.id, expiresAt: inHours(1) });
    const client = await ca.issueClient(`CN=${identityId}`);
    await enroll.enrollWithToken({ token: e.token, clientCertChain: [client.chainPem] });
    const a = [...credentials.authenticators.values()].find((x) => x.identityId === identityId)!;
    const err = await rejects(
      extensions.extend({
        identityId,
        authenticatorId: a.id,
        clientCertChain: [client.chainPem],
        csrPem: (await makeCsr('CN=y')).csrPem,
      }),
    );
    expect(err.code).toBe('CAN_NOT_UPDATE_AUTHENTICATOR');
  });

  it('re-enroll turns updb into updb, a controller certificate into ott, a CA certificate into ottca', async () => {
    const { authenticator: certAuth, identityId } = await ottEnrolled();
    const ott = await extensions.reEnroll(certAuth.id, inHours(3));
    expect(ott).toMatchObject({ method: 'ott', identityId, caId: null });
    expect(credentials.authenticators.has(certAuth.id)).toBe(false);

    const updbIdentity = newIdentity();
    const { id: updbId } = await credentials.createAuthenticator({
      identityId: updbIdentity,
      method: 'updb',
      username: `n-${updbIdentity}`,
      password: 'secret-pw',
    });
    expect(await extensions.reEnroll(updbId, inHours(3))).toMatchObject({
      method: 'updb',
      username: `n-${updbIdentity}`,
    });

    const { ca, record } = await verifiedCa('ReEnroll', { ott: true });
    const caIdentity = newIdentity();
    const client = await ca.issueClient('CN=z');
    // recorded CA, and a CA found by verifying the certificate when none was recorded
    const { id: recorded } = await credentials.createAuthenticator({
      identityId: caIdentity,
      method: 'cert',
      certPem: client.certPem,
      caId: record.id,
    });
    expect(await extensions.reEnroll(recorded, inHours(3))).toMatchObject({ method: 'ottca', caId: record.id });
    const another = newIdentity();
    // (signed by the registered CA certificate itself: a stored certificate has no intermediates)
    const direct = await signCsr(ca.rootSigner, (await makeCsr('CN=w')).csrPem, { kind: 'client', validityDays: 5 });
    const { id: unrecorded } = await credentials.createAuthenticator({
      identityId: another,
      method: 'cert',
      certPem: direct,
    });
    expect(await extensions.reEnroll(unrecorded, inHours(3))).toMatchObject({ method: 'ottca', caId: record.id });
    expect((await rejects(extensions.reEnroll('missing', inHours(1)))).code).toBe('NOT_FOUND');
  });
});

describe('API session certificates', () => {
  it('are issued for 12 hours, scoped to their session, and go with it', async () => {
    const owner = { identityId: newIdentity(), apiSessionId: `sess-${randomUUID()}` };
    const stranger = { identityId: owner.identityId, apiSessionId: `sess-${randomUUID()}` };
    const { certificate, cas: bundle } = await sessionCerts.create(owner, (await makeCsr('CN=session')).csrPem);
    expect(bundle).toBe(pki.serverIdentity().caBundlePem);
    expect(certificate.validTo.getTime() - clock.getTime()).toBeLessThanOrEqual(12 * 3_600_000);
    expect(certificate.validTo.getTime() - clock.getTime()).toBeGreaterThan(11.9 * 3_600_000);
    await verifyChain(certificate.certPem, [], [bundle], { usage: 'clientAuth' });
    expect((await sessionCerts.list(owner, {})).items.map((c) => c.id)).toEqual([certificate.id]);
    expect((await sessionCerts.list(stranger, {})).totalCount).toBe(0);
    expect((await rejects(sessionCerts.get(stranger, certificate.id))).code).toBe('NOT_FOUND');
    expect((await rejects(sessionCerts.create(owner, 'bad'))).code).toBe('COULD_NOT_PROCESS_CSR');
    const second = await sessionCerts.create(owner, (await makeCsr('CN=session2')).csrPem);
    await sessionCerts.delete(owner, second.certificate.id);
    expect((await rejects(sessionCerts.delete(owner, second.certificate.id))).code).toBe('NOT_FOUND');
    expect(await sessionCerts.deleteForSession(owner.apiSessionId)).toBe(1);
    expect((await sessionCerts.list(owner, {})).totalCount).toBe(0);
  });
});

describe('the server certificate', () => {
  it('is for the advertised host and every extra name (the router edge’s host), and is issued anew when a name is added', async () => {
    // A PKI of its own: its own database and key.
    const own = await createTestDatabase('pkinames');
    const ownDb = await openDatabase({ url: own.url });
    await migrate(ownDb, migrations);
    const box = new SecretBox(SecretBox.generateSecret());
    const store = new PgPkiMaterialStore(ownDb.db);
    const first = new ControllerPkiService(store, box, { advertisedAddress: 'api.example.test:1280' });
    await first.initialize();
    const names = (svc: ControllerPkiService) => parsePemChain(svc.serverIdentity().certChainPem)[0]!.sans;
    expect(names(first).dnsNames).toContain('api.example.test');
    expect(names(first).dnsNames).not.toContain('ctrl.example.test');
    // The same PKI (same stored material and key), now told of the control port's host and an address.
    const second = new ControllerPkiService(store, box, {
      advertisedAddress: 'api.example.test:1280',
      extraNames: ['ctrl.example.test', '10.1.2.3'],
    });
    await second.initialize();
    expect(names(second).dnsNames).toEqual(
      expect.arrayContaining(['api.example.test', 'ctrl.example.test', 'localhost']),
    );
    expect(names(second).ipAddresses).toEqual(expect.arrayContaining(['10.1.2.3', '127.0.0.1']));
    expect(second.serverIdentity().certChainPem).not.toBe(first.serverIdentity().certChainPem);
    // Nothing new to cover: the certificate is kept.
    const third = new ControllerPkiService(store, box, {
      advertisedAddress: 'api.example.test:1280',
      extraNames: ['ctrl.example.test'],
    });
    await third.initialize();
    expect(third.serverIdentity().certChainPem).toBe(second.serverIdentity().certChainPem);
    await ownDb.close();
    await own.drop();
  });
});
