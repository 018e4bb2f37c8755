import { ApiError, type PendingEnrollment } from '@ziti/contracts';
import { type EventSink, createUnitOfWork, openDatabase, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signCsr } from '@ziti/x509';
import { makeCsr, makeTestCa } from '../../../../test/support/x509.ts';
import { createTestDatabase } from '../../../../test/support/infra.ts';
import { bindAuthStores } from '../app.ts';
import { AuthPolicyService } from '../auth-policies/auth-policies.domain.ts';
import { certificateFingerprint } from '../authenticators/authenticators.domain.ts';
import {
  CredentialService,
  type CredentialStores,
  type EnrollmentPort,
  type EnrollmentRequestSpec,
} from './credentials.domain.ts';
import { IdentityService } from '../identities/identities.domain.ts';
import { SessionFactorSync } from '../api-sessions/session-factors.domain.ts';
import { PgCredentialStore } from './credentials.store.ts';
import { authTestBed, plainHasher, seed } from '../../test/authentication/support.ts';

/**
 * The credentials pki-enrollment's flows create and change, on auth's real stores in a real
 * Postgres database (migration 0003 included).
 */
type Bed = Awaited<ReturnType<typeof authTestBed>>;
let bed: Bed;
let drop: () => Promise<void>;
let credentials: CredentialService;
let identities: IdentityService;
let n = 0;

/** Records what identity creation asks of pki-enrollment. */
class FakeEnrollments implements EnrollmentPort {
  created: { identityId: string; specs: EnrollmentRequestSpec[] }[] = [];
  deleted: { identityId: string; ids: string[] }[] = [];
  async createForIdentity(identityId: string, specs: EnrollmentRequestSpec[]): Promise<string[]> {
    this.created.push({ identityId, specs });
    return specs.map((s) => `enr-${s.method}-${identityId}`);
  }
  async deleteForIdentity(identityId: string, ids: string[]): Promise<void> {
    this.deleted.push({ identityId, ids });
  }
  async pendingFor(): Promise<Record<string, PendingEnrollment[]>> {
    return {};
  }
}
const enrollments = new FakeEnrollments();

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

beforeAll(async () => {
  const db = await createTestDatabase('authcred');
  drop = db.drop;
  bed = await authTestBed({ database: await openDatabase({ url: db.url }) });
  await seed(bed.work);
  const work = createUnitOfWork<CredentialStores>(bed.database, undefined, 'auth', (tx, events) => ({
    ...bindAuthStores(tx, events),
    credentials: new PgCredentialStore(tx),
  }));
  credentials = new CredentialService(work, plainHasher, bed.sessions);
  identities = new IdentityService(bed.work, bed.sessions, 600, undefined, enrollments);
});
afterAll(async () => {
  await bed?.close();
  await drop?.();
});

const identity = async (extra: Record<string, unknown> = {}) =>
  (await identities.create({ name: `cred-${++n}-${Date.now()}`, type: 'User', isAdmin: false, ...extra })).id;

describe('identity creation with an enrollment', () => {
  it('asks pki-enrollment for the first matching enrollment, and takes it back when the identity does not commit', async () => {
    const id = await identity({ enrollment: { ott: true, updb: 'ignored' } });
    expect(enrollments.created.at(-1)).toEqual({ identityId: id, specs: [{ method: 'ott' }] });
    await identity({ enrollment: { ottca: 'ca1' } });
    expect(enrollments.created.at(-1)!.specs).toEqual([{ method: 'ottca', caId: 'ca1' }]);

    const name = `dup-${Date.now()}`;
    await identities.create({ name, type: 'User', isAdmin: false });
    const err = await failure(
      identities.create({ name, type: 'User', isAdmin: false, enrollment: { updb: 'someone' } }),
    );
    expect(err.cause?.field).toBe('name');
    const attempted = enrollments.created.at(-1)!;
    expect(enrollments.deleted.at(-1)).toEqual({
      identityId: attempted.identityId,
      ids: [`enr-updb-${attempted.identityId}`],
    });
    expect(await bed.work((s) => s.identities.get(attempted.identityId))).toBeNull();
  });
});

describe('credentials from enrollment', () => {
  it('cert authenticators remember their CA; one per method; a certificate only once', async () => {
    const ca = await makeTestCa('Cred CA');
    const client = await ca.issueClient('CN=c1');
    const id = await identity();
    const { id: authId } = await credentials.createAuthenticator({
      identityId: id,
      method: 'cert',
      certPem: client.certPem,
      caId: 'ca-1',
    });
    expect(await credentials.getAuthenticator(authId)).toMatchObject({
      identityId: id,
      method: 'cert',
      caId: 'ca-1',
      certFingerprint: certificateFingerprint(client.certPem),
      unverifiedCertPem: null,
    });
    expect(
      (
        await failure(
          credentials.createAuthenticator({
            identityId: id,
            method: 'cert',
            certPem: (await ca.issueClient('CN=c2')).certPem,
          }),
        )
      ).code,
    ).toBe('MAX_AUTHENTICATOR_METHODS_REACHED');
    expect(
      (
        await failure(
          credentials.createAuthenticator({ identityId: await identity(), method: 'cert', certPem: client.certPem }),
        )
      ).code,
    ).toBe('CERT_IN_USE');
    expect(
      (
        await failure(
          credentials.createAuthenticator({ identityId: 'nobody', method: 'cert', certPem: client.certPem }),
        )
      ).code,
    ).toBe('NOT_FOUND');
    expect((await failure(credentials.getAuthenticator('missing'))).code).toBe('NOT_FOUND');
  });

  it("updb passwords must meet the identity's auth policy", async () => {
    const policies = new AuthPolicyService(bed.work, new SessionFactorSync(bed.work, bed.sessions, 600));
    const strict = await policies.create({
      name: `strict-${Date.now()}`,
      primary: {
        cert: { allowed: true, allowExpiredCerts: true },
        updb: {
          allowed: true,
          minPasswordLength: 10,
          requireSpecialChar: true,
          requireNumberChar: true,
          requireMixedCase: true,
          maxAttempts: 0,
          lockoutDurationMinutes: 0,
        },
        extJwt: { allowed: true, allowedSigners: [] },
      },
      secondary: { requireTotp: false, requireExtJwtSigner: null },
    });
    const id = await identity({ authPolicyId: strict.id });
    const username = `user-${Date.now()}`;
    for (const weak of ['short', 'longenough1!', 'LongEnough!!', 'LongEnough11']) {
      expect(
        (await failure(credentials.createAuthenticator({ identityId: id, method: 'updb', username, password: weak })))
          .cause?.field,
      ).toBe('password');
    }
    expect(
      (
        await failure(
          credentials.createAuthenticator({
            identityId: id,
            method: 'updb',
            username: 'abc',
            password: 'Long-Enough-1',
          }),
        )
      ).cause?.field,
    ).toBe('username');
    const { id: authId } = await credentials.createAuthenticator({
      identityId: id,
      method: 'updb',
      username,
      password: 'Long-Enough-1',
    });
    expect(await credentials.getAuthenticator(authId)).toMatchObject({ method: 'updb', username, certPem: null });
    // the taken username is a field error too
    expect(
      (
        await failure(
          credentials.createAuthenticator({
            identityId: await identity(),
            method: 'updb',
            username,
            password: 'whatever1',
          }),
        )
      ).cause?.field,
    ).toBe('username');
  });

  it('extension: staged beside the current certificate, promoted only with the staged fingerprint', async () => {
    const ca = await makeTestCa('Ext CA');
    const first = await ca.issueClient('CN=first');
    const second = await ca.issueClient('CN=second');
    const id = await identity();
    const { id: authId } = await credentials.createAuthenticator({
      identityId: id,
      method: 'cert',
      certPem: first.certPem,
    });
    expect(
      (
        await failure(
          credentials.stageCertificate({ authenticatorId: authId, identityId: 'other', certPem: second.certPem }),
        )
      ).code,
    ).toBe('NOT_FOUND');
    await credentials.stageCertificate({ authenticatorId: authId, identityId: id, certPem: second.certPem });
    expect(await credentials.getAuthenticator(authId)).toMatchObject({
      certPem: first.certPem,
      unverifiedCertPem: second.certPem,
    });
    expect(
      (
        await failure(
          credentials.replaceCertificate({
            authenticatorId: authId,
            identityId: id,
            fingerprint: certificateFingerprint(first.certPem),
          }),
        )
      ).code,
    ).toBe('INVALID_CLIENT_CERT');
    await credentials.replaceCertificate({
      authenticatorId: authId,
      identityId: id,
      fingerprint: certificateFingerprint(second.certPem),
    });
    expect(await credentials.getAuthenticator(authId)).toMatchObject({
      certPem: second.certPem,
      certFingerprint: certificateFingerprint(second.certPem),
      unverifiedCertPem: null,
      unverifiedCertFingerprint: null,
    });
    expect(
      await bed.work((s) => s.authenticators.findByFingerprint(certificateFingerprint(second.certPem))),
    ).toMatchObject({ id: authId });
  });

  it('CA auto-enrollment identities: named with a counter on collisions, with roles, atomically', async () => {
    const ca = await makeTestCa('Auto CA');
    const name = `auto-${Date.now()}`;
    const a = await credentials.createIdentity({
      id: `ida${Date.now()}`,
      name,
      roleAttributes: ['b', 'a'],
      certPem: (await ca.issueClient('CN=a')).certPem,
      caId: 'ca-9',
    });
    expect(a.name).toBe(name);
    const device = await ca.issueClient('CN=b');
    const b = await credentials.createIdentity({
      id: `idb${Date.now()}`,
      name,
      roleAttributes: [],
      certPem: device.certPem,
      caId: 'ca-9',
    });
    expect(b.name).toBe(`${name}000001`);
    const stored = await bed.work((s) => s.identities.get(a.id));
    expect(stored).toMatchObject({
      typeId: 'Default',
      roleAttributes: ['a', 'b'],
      authPolicyId: 'default',
      isAdmin: false,
    });
    const events = await queryRows<{ payload: { id: string } }>(
      bed.database.db,
      "select payload from outbox where type = 'identity.created'",
    );
    expect(events.map((e) => e.payload.id)).toContain(a.id);

    const clash = await failure(
      credentials.createIdentity({
        id: `idc${Date.now()}`,
        name: `other-${Date.now()}`,
        roleAttributes: [],
        certPem: device.certPem,
      }),
    );
    expect(clash.code).toBe('CERT_IN_USE');
    const ext = await credentials.createIdentity({
      id: `idd${Date.now()}`,
      name: `ext-${Date.now()}`,
      roleAttributes: [],
      externalId: `x-${Date.now()}`,
    });
    expect((await bed.work((s) => s.identities.get(ext.id)))!.externalId).toMatch(/^x-/);
    expect(await bed.work((s) => s.authenticators.listByIdentity(ext.id))).toEqual([]);
    expect(await credentials.identities([a.id, 'nobody'])).toEqual([{ id: a.id, name, authPolicyId: 'default' }]);
  });

  it('a deleted CA takes the authenticators recorded with it and those its certificate signed', async () => {
    const ca = await makeTestCa('Doomed CA');
    const keep = await makeTestCa('Kept CA');
    const recorded = await credentials.createAuthenticator({
      identityId: await identity(),
      method: 'cert',
      certPem: (await ca.issueClient('CN=r')).certPem,
      caId: 'doomed',
    });
    // no recorded CA, certificate signed by the CA's registered certificate
    const direct = await signCsr(ca.rootSigner, (await makeCsr('CN=d')).csrPem, { kind: 'client', validityDays: 5 });
    const unrecorded = await credentials.createAuthenticator({
      identityId: await identity(),
      method: 'cert',
      certPem: direct,
    });
    const other = await credentials.createAuthenticator({
      identityId: await identity(),
      method: 'cert',
      certPem: (await keep.issueClient('CN=k')).certPem,
    });
    // API sessions made with the doomed authenticator end with it; one made with another does not.
    const session = (identityId: string, authenticatorId: string) => {
      const now = new Date().toISOString();
      return {
        id: `as-${++n}-${Date.now()}`,
        token: `token-${n}-${Math.random()}`,
        identityId,
        identityName: 'someone',
        isAdmin: false,
        authenticatorId,
        authMethod: 'cert' as const,
        ipAddress: '127.0.0.1',
        configTypes: [],
        isMfaRequired: false,
        isMfaComplete: false,
        tags: {},
        createdAt: now,
        updatedAt: now,
      };
    };
    const recordedOwner = (await credentials.getAuthenticator(recorded.id)).identityId;
    const doomedSession = session(recordedOwner, recorded.id);
    const otherFactor = session(recordedOwner, 'some-updb-authenticator');
    const keptSession = session((await credentials.getAuthenticator(other.id)).identityId, other.id);
    for (const r of [doomedSession, otherFactor, keptSession]) await bed.sessions.create(r, 600);
    const announced: { type: string; data: unknown }[] = [];
    const events: EventSink = { emit: async (def, data) => void announced.push({ type: def.type, data }) };
    const deleted = await bed.database.transaction((tx) =>
      credentials.deleteCertificatesOfCa(
        { credentials: new PgCredentialStore(tx), events },
        { id: 'doomed', certPem: ca.rootPem },
      ),
    );
    expect(deleted).toBe(2);
    // Each deletion is announced with the authenticator's last state (no certificate, no hash),
    // and the one session made with them as ended.
    expect(announced.map((e) => [e.type, (e.data as { id: string }).id]).sort()).toEqual(
      [
        ['authenticator.deleted', recorded.id],
        ['authenticator.deleted', unrecorded.id],
        ['apiSession.deleted', doomedSession.id],
      ].sort(),
    );
    expect(announced.find((e) => e.type === 'apiSession.deleted')!.data).toMatchObject({
      authenticatorId: recorded.id,
      reason: 'authenticatorDeleted',
    });
    expect(await bed.sessions.touch(doomedSession.token, 600)).toBeNull();
    expect(await bed.sessions.touch(otherFactor.token, 600)).not.toBeNull();
    expect(await bed.sessions.touch(keptSession.token, 600)).not.toBeNull();
    expect(Object.keys(announced.find((e) => e.type === 'authenticator.deleted')!.data as object).sort()).toEqual(
      ['certFingerprint', 'createdAt', 'id', 'identityId', 'method', 'updatedAt', 'username'].sort(),
    );
    expect((await failure(credentials.getAuthenticator(recorded.id))).code).toBe('NOT_FOUND');
    expect((await failure(credentials.getAuthenticator(unrecorded.id))).code).toBe('NOT_FOUND');
    expect((await credentials.getAuthenticator(other.id)).method).toBe('cert');
  });
});
