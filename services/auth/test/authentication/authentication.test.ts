import { X509Certificate, createHash } from 'node:crypto';
import { ApiError, type VerifyClientCertificateResult } from '@ziti/contracts';
import { verifyChain } from '@ziti/x509';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JoseSignerKeys } from '../../src/external-jwt-signers/jose-signer-keys.adapter.ts';
import { type AuthPolicyInput, AuthPolicyService } from '../../src/auth-policies/auth-policies.domain.ts';
import { type AuthenticationDeps, AuthenticationService } from '../../src/api-sessions/authentication.domain.ts';
import { AuthenticatorService } from '../../src/authenticators/authenticators.domain.ts';
import { ExternalJwtSignerService } from '../../src/external-jwt-signers/external-jwt-signers.domain.ts';
import { IdentityService } from '../../src/identities/identities.domain.ts';
import { SessionFactorSync } from '../../src/api-sessions/session-factors.domain.ts';
import { PgApiSessionQuery } from '../../src/api-sessions/api-sessions.store.ts';
import {
  type SigningKey,
  type TestPki,
  certificateFor,
  issueClientCertificate,
  newSigningKey,
  newTestPki,
  signToken,
} from './jwt-kit.ts';
import { RecordedAttempts, authTestBed, plainHasher, seed } from './support.ts';

type Bed = Awaited<ReturnType<typeof authTestBed>>;
let bed: Bed;
let identities: IdentityService;
let authenticators: AuthenticatorService;
let policies: AuthPolicyService;
let signers: ExternalJwtSignerService;
let auth: AuthenticationService;
let pki: TestPki;
let strangerPki: TestPki;
/** What the fake pki-enrollment answers for a chain (null: it does not answer). */
let pkiVerdict: (chain: string[]) => VerifyClientCertificateResult | null = () => null;
const refusals: string[] = [];
const attempts = new RecordedAttempts();
let n = 0;

const fullPolicy = (
  o: { updb?: object; cert?: object; extJwt?: object; secondary?: object } = {},
): AuthPolicyInput => ({
  name: `policy-${++n}`,
  primary: {
    cert: { allowed: true, allowExpiredCerts: true, ...o.cert },
    updb: {
      allowed: true,
      minPasswordLength: 5,
      requireSpecialChar: false,
      requireNumberChar: false,
      requireMixedCase: false,
      maxAttempts: 0,
      lockoutDurationMinutes: 0,
      ...o.updb,
    },
    extJwt: { allowed: true, allowedSigners: [], ...o.extJwt },
  },
  secondary: { requireTotp: false, requireExtJwtSigner: null, ...o.secondary },
});

async function user(options: { policy?: AuthPolicyInput; externalId?: string; password?: string } = {}) {
  const policy = options.policy ? await policies.create(options.policy) : null;
  const identity = await identities.create({
    name: `user-${++n}`,
    type: 'User',
    isAdmin: false,
    ...(policy ? { authPolicyId: policy.id } : {}),
    ...(options.externalId ? { externalId: options.externalId } : {}),
  });
  const username = `username-${n}`;
  const password = options.password ?? 'Secret-Pass-1';
  const a = await authenticators.create({ method: 'updb', identityId: identity.id, username, password });
  return { identity, username, password, authenticatorId: a.id, policyId: policy?.id ?? 'default' };
}

const login = (username: string, password: string, extra: object = {}) =>
  auth.authenticate({ method: 'password', username, password, remoteAddress: '127.0.0.1', ...extra });

async function failure(p: Promise<unknown>): Promise<{ code: string; cause?: unknown }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, cause: err.cause };
    throw err;
  }
  return { code: 'OK' };
}

/** The service's dependencies on this file's bed, fakes of pki-enrollment, and the recorded attempts. */
const authDeps = (): AuthenticationDeps => ({
  work: bed.work,
  sessions: bed.sessions,
  hasher: plainHasher,
  sessionQuery: new PgApiSessionQuery(bed.database.db),
  sessionTtlSeconds: 600,
  signerKeys: new JoseSignerKeys(),
  certificates: { controllerCaBundle: async () => pki.bundle, verifyWithPki: async (chain) => pkiVerdict(chain) },
  verifyChain: (leaf, intermediates, roots, options) => verifyChain(leaf, intermediates, roots, options),
  lockout: (id, minutes) => identities.disable(id, minutes),
  onRefused: (reason) => refusals.push(reason),
  attempts,
});

/**
 * pki-enrollment's verdict on a certificate an administrator registers (the e2e suite runs the real
 * one); the login tests below register certificates the login must then refuse, as after their CA
 * was removed, so it vouches unless a test says otherwise.
 */
let vouches = true;
const vouching = { vouchesFor: async () => vouches };

beforeAll(async () => {
  bed = await authTestBed();
  await seed(bed.work);
  pki = await newTestPki('Test Controller');
  strangerPki = await newTestPki('Stranger');
  const sync = new SessionFactorSync(bed.work, bed.sessions, 600);
  identities = new IdentityService(bed.work, bed.sessions, 600);
  authenticators = new AuthenticatorService(bed.work, plainHasher, bed.sessions, vouching);
  policies = new AuthPolicyService(bed.work, sync);
  signers = new ExternalJwtSignerService(bed.work, sync);
  auth = new AuthenticationService(authDeps());
});
afterAll(() => bed.close());

describe('password authentication under the auth policy', () => {
  it('opens a session with no pending factor', async () => {
    const u = await user();
    const { session, authQueries } = await login(u.username, u.password);
    expect(session).toMatchObject({
      identityId: u.identity.id,
      authenticatorId: u.authenticatorId,
      authMethod: 'password',
      isMfaRequired: false,
      requireTotp: false,
      requiredExtJwtSigner: null,
    });
    expect(authQueries).toEqual([]);
  });

  it('refuses when the policy does not allow updb, and a disabled identity', async () => {
    const u = await user({ policy: fullPolicy({ updb: { allowed: false } }) });
    expect((await failure(login(u.username, u.password))).code).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('UPDB_NOT_ALLOWED');
    const d = await user();
    await identities.disable(d.identity.id, 0);
    expect((await failure(login(d.username, d.password))).code).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('DISABLED');
  });

  it('maxAttempts failed passwords in a row lock the identity for lockoutDurationMinutes and end its sessions', async () => {
    const u = await user({ policy: fullPolicy({ updb: { maxAttempts: 3, lockoutDurationMinutes: 5 } }) });
    const live = await login(u.username, u.password);
    for (let i = 0; i < 2; i++) expect((await failure(login(u.username, 'wrong-password'))).code).toBe('INVALID_AUTH');
    // A success in between starts the count again.
    await login(u.username, u.password);
    for (let i = 0; i < 2; i++) await failure(login(u.username, 'wrong-password'));
    expect((await identities.get(u.identity.id)).disabledAt).toBeNull();
    await failure(login(u.username, 'wrong-password'));
    const locked = await identities.get(u.identity.id);
    expect(locked.disabledAt).not.toBeNull();
    expect(locked.disabledUntil!.getTime() - locked.disabledAt!.getTime()).toBe(5 * 60_000);
    expect(await bed.sessions.getById(live.session.id, 600)).toBeNull();
    expect((await failure(login(u.username, u.password))).code).toBe('INVALID_AUTH');
    await identities.enable(u.identity.id);
    await login(u.username, u.password);
  });

  it('a lockout of 0 minutes lasts until an administrator enables the identity; maxAttempts 0 never locks', async () => {
    const u = await user({ policy: fullPolicy({ updb: { maxAttempts: 1, lockoutDurationMinutes: 0 } }) });
    await failure(login(u.username, 'wrong-password'));
    const locked = await identities.get(u.identity.id);
    expect(locked.disabledAt).not.toBeNull();
    expect(locked.disabledUntil).toBeNull();
    const free = await user();
    for (let i = 0; i < 8; i++) await failure(login(free.username, 'wrong-password'));
    await login(free.username, free.password);
  });
  it('reports every attempt: a success with its identity, authenticator and session; failures with the code the caller got', async () => {
    const u = await user({ policy: fullPolicy({ updb: { maxAttempts: 2, lockoutDurationMinutes: 5 } }) });
    const from = attempts.all.length;
    const { session } = await login(u.username, u.password);
    await failure(login(u.username, 'wrong-password-1'));
    await failure(login('nobody-is-called-this', 'Secret-Pass-1'));
    expect(
      (await failure(auth.authenticate({ method: 'password', username: u.username, remoteAddress: '::1' }))).code,
    ).toBe('COULD_NOT_VALIDATE');
    await failure(login(u.username, 'wrong-password-2')); // the second in a row: locked out
    await failure(login(u.username, u.password)); // locked: refused, though the password is right
    // An unknown method is not an attempt of any method.
    expect((await failure(auth.authenticate({ method: 'carrier-pigeon', remoteAddress: '::1' }))).code).toBe(
      'INVALID_AUTH_METHOD',
    );
    const known = { identityId: u.identity.id, identityName: u.identity.name, authenticatorId: u.authenticatorId };
    const reported = attempts.all.slice(from);
    expect(reported.map(({ at: _at, ...a }) => a)).toEqual([
      { method: 'password', outcome: 'succeeded', ...known, apiSessionId: session.id },
      { method: 'password', outcome: 'failed', ...known, reason: 'INVALID_AUTH' },
      // A username that matched nothing (often a mistyped password) is not kept: no identity at all.
      { method: 'password', outcome: 'failed', reason: 'INVALID_AUTH' },
      // Refused before the username was looked up: nobody to name.
      { method: 'password', outcome: 'failed', reason: 'COULD_NOT_VALIDATE' },
      { method: 'password', outcome: 'failed', ...known, reason: 'INVALID_AUTH' },
      { method: 'password', outcome: 'failed', ...known, reason: 'INVALID_AUTH' },
    ]);
    // The log keeps why (the lockout, then the disabled identity); the attempt, what the caller was told.
    expect(refusals.slice(-3)).toEqual(['LOCKED_OUT', 'WRONG_PASSWORD', 'DISABLED']);
    const text = JSON.stringify(reported);
    for (const secret of [u.password, 'wrong-password-1', 'wrong-password-2', 'nobody-is-called-this'])
      expect(text).not.toContain(secret);
  });

  it('a disabled identity and a policy without updb are failures of that identity', async () => {
    const d = await user();
    await identities.disable(d.identity.id, 0);
    const off = await user({ policy: fullPolicy({ updb: { allowed: false } }) });
    const from = attempts.all.length;
    await failure(login(d.username, d.password));
    await failure(login(off.username, off.password));
    expect(attempts.all.slice(from).map((a) => [a.outcome, a.identityId, a.authenticatorId, a.reason])).toEqual([
      ['failed', d.identity.id, d.authenticatorId, 'INVALID_AUTH'],
      ['failed', off.identity.id, off.authenticatorId, 'INVALID_AUTH'],
    ]);
  });

  it('a failure that is not a refusal reports the code the caller gets for it', async () => {
    const u = await user();
    const broken = new AuthenticationService({
      ...authDeps(),
      hasher: {
        ...plainHasher,
        verify: async () => {
          throw new Error('the hashing thread died');
        },
      },
    });
    const from = attempts.all.length;
    await expect(
      broken.authenticate({ method: 'password', username: u.username, password: u.password, remoteAddress: '::1' }),
    ).rejects.toThrow('the hashing thread died');
    expect(attempts.all.slice(from)).toMatchObject([
      { method: 'password', outcome: 'failed', identityId: u.identity.id, reason: 'UNHANDLED' },
    ]);
  });
});

describe('passwords must meet the auth policy (beyond the reference)', () => {
  const strict = () =>
    fullPolicy({
      updb: { minPasswordLength: 10, requireMixedCase: true, requireNumberChar: true, requireSpecialChar: true },
    });

  it('on create and admin update', async () => {
    const p = await policies.create(strict());
    const identity = await identities.create({
      name: `strict-${++n}`,
      type: 'User',
      isAdmin: false,
      authPolicyId: p.id,
    });
    const attempt = (password: string) =>
      failure(
        authenticators.create({ method: 'updb', identityId: identity.id, username: `strict-user-${n}`, password }),
      );
    for (const [password, reason] of [
      ['Sh0rt!', 'at least 10'],
      ['alllowercase1!', 'upper and lower'],
      ['NoDigitsHere!', 'a number'],
      ['NoSpecial1234', 'special character'],
    ] as const) {
      const f = await attempt(password);
      expect(f.code).toBe('COULD_NOT_VALIDATE');
      expect(f.cause).toMatchObject({ field: 'password' });
      expect(String((f.cause as { reason: string }).reason)).toContain(reason);
      expect(JSON.stringify(f.cause)).not.toContain(password);
    }
    const ok = await authenticators.create({
      method: 'updb',
      identityId: identity.id,
      username: `strict-user-${n}`,
      password: 'Good-Password-9',
    });
    expect((await failure(authenticators.update(ok.id, { password: 'weak-password' }, 'patch'))).code).toBe(
      'COULD_NOT_VALIDATE',
    );
    await authenticators.update(ok.id, { password: 'Änother-Good-9' }, 'patch');
  });

  it('self-service change: the current password must be right (401 with the field), the new one must meet the policy', async () => {
    const p = strict();
    const u = await user({ policy: p, password: 'First-Password-1' });
    const wrong = await failure(
      authenticators.updateOwn(
        u.identity.id,
        u.authenticatorId,
        { currentPassword: 'not-it', password: 'Second-Password-2' },
        'patch',
      ),
    );
    expect(wrong.code).toBe('UNAUTHORIZED');
    expect(wrong.cause).toMatchObject({ field: 'currentPassword' });
    expect(
      (
        await failure(
          authenticators.updateOwn(
            u.identity.id,
            u.authenticatorId,
            { currentPassword: 'First-Password-1', password: 'weak' },
            'patch',
          ),
        )
      ).code,
    ).toBe('COULD_NOT_VALIDATE');
    await authenticators.updateOwn(
      u.identity.id,
      u.authenticatorId,
      { currentPassword: 'First-Password-1', password: 'Second-Password-2' },
      'patch',
    );
    await login(u.username, 'Second-Password-2');
    await authenticators.updateOwn(
      u.identity.id,
      u.authenticatorId,
      { currentPassword: 'Second-Password-2', username: `renamed-${n}`, password: 'Third-Password-3' },
      'replace',
    );
    await login(`renamed-${n}`, 'Third-Password-3');
    const other = await user();
    expect(
      (
        await failure(
          authenticators.updateOwn(
            u.identity.id,
            other.authenticatorId,
            { currentPassword: other.password, password: 'Whatever-Pass-1' },
            'patch',
          ),
        )
      ).code,
    ).toBe('NOT_FOUND');
    expect((await failure(authenticators.getOwn(u.identity.id, other.authenticatorId))).code).toBe('NOT_FOUND');
  });
});

describe('certificate authentication', () => {
  const certLogin = (chain: string[]) =>
    auth.authenticate({ method: 'cert', clientCertChain: chain, remoteAddress: '127.0.0.1' });
  const fp = (pem: string) => createHash('sha1').update(new X509Certificate(pem).raw).digest('hex');

  async function certUser(certPem: string, policy?: AuthPolicyInput) {
    const p = policy ? await policies.create(policy) : null;
    const identity = await identities.create({
      name: `cert-${++n}`,
      type: 'User',
      isAdmin: false,
      ...(p ? { authPolicyId: p.id } : {}),
    });
    const a = await authenticators.create({ method: 'cert', identityId: identity.id, certPem });
    return { identity, authenticatorId: a.id };
  }

  it('a certificate no known CA vouches for is refused as an authenticator, with the reason', async () => {
    const c = await issueClientCertificate(strangerPki, 'stranger-device');
    const identity = await identities.create({ name: `cert-${++n}`, type: 'User', isAdmin: false });
    vouches = false;
    try {
      const refused = await authenticators.create({ method: 'cert', identityId: identity.id, certPem: c.certPem }).then(
        () => undefined,
        (err: unknown) => err as ApiError,
      );
      expect(refused).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'certPem', reason: `the certificate [${fp(c.certPem)}] did not verify against known CAs` },
      });
    } finally {
      vouches = true;
    }
    expect((await authenticators.list({}, identity.id)).items).toEqual([]);
  });

  it('a controller-issued certificate with an authenticator logs in; the chain may come with its intermediate', async () => {
    const c = await issueClientCertificate(pki, 'device-1');
    const u = await certUser(c.certPem);
    const { session } = await certLogin([c.certPem]);
    expect(session).toMatchObject({
      identityId: u.identity.id,
      authenticatorId: u.authenticatorId,
      authMethod: 'cert',
    });
    await certLogin([c.certPem, pki.bundle[0]!]);
  });

  it('expired certificates pass only with allowExpiredCerts; cert.allowed=false refuses', async () => {
    const old = await issueClientCertificate(pki, 'old-device', {
      now: new Date(Date.now() - 40 * 86_400_000),
      validityDays: 10,
    });
    await certUser(old.certPem);
    await certLogin([old.certPem]);
    const old2 = await issueClientCertificate(pki, 'old-device-2', {
      now: new Date(Date.now() - 40 * 86_400_000),
      validityDays: 10,
    });
    await certUser(old2.certPem, fullPolicy({ cert: { allowExpiredCerts: false } }));
    expect((await failure(certLogin([old2.certPem]))).code).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('CERT_EXPIRED');
    const c = await issueClientCertificate(pki, 'device-no-cert-auth');
    await certUser(c.certPem, fullPolicy({ cert: { allowed: false } }));
    expect((await failure(certLogin([c.certPem]))).code).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('CERT_NOT_ALLOWED');
  });

  it('a certificate whose authenticator exists but that the controller did not issue needs pki-enrollment to vouch for it', async () => {
    const foreign = await issueClientCertificate(strangerPki, 'foreign');
    await certUser(foreign.certPem);
    pkiVerdict = () => null;
    expect((await failure(certLogin([foreign.certPem]))).code).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('CERT_UNTRUSTED');
    pkiVerdict = () => ({
      trusted: true,
      issuer: 'ca',
      caId: 'ca1',
      isAuthEnabled: true,
      externalId: null,
      fingerprint: fp(foreign.certPem),
    });
    await certLogin([foreign.certPem]);
    pkiVerdict = () => ({
      trusted: true,
      issuer: 'ca',
      caId: 'ca1',
      isAuthEnabled: true,
      externalId: null,
      fingerprint: 'someone-else',
    });
    expect((await failure(certLogin([foreign.certPem]))).code).toBe('INVALID_AUTH');
    pkiVerdict = () => ({ trusted: false, fingerprint: fp(foreign.certPem) });
    expect((await failure(certLogin([foreign.certPem]))).code).toBe('INVALID_AUTH');
  });

  it('without an authenticator, a verified CA with isAuthEnabled finds the identity by its externalIdClaim', async () => {
    const c = await issueClientCertificate(strangerPki, 'ext-device');
    const externalId = `ext-${++n}`;
    const identity = await identities.create({ name: `by-claim-${n}`, type: 'User', isAdmin: false, externalId });
    const verdict = {
      trusted: true,
      issuer: 'ca' as const,
      caId: 'ca1',
      isAuthEnabled: true,
      externalId,
      fingerprint: fp(c.certPem),
    };
    pkiVerdict = () => verdict;
    const { session } = await certLogin([c.certPem]);
    expect(session.identityId).toBe(identity.id);
    pkiVerdict = () => ({ ...verdict, externalId: null });
    expect(refusals.length > 0 && (await failure(certLogin([c.certPem]))).code).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('CERT_UNKNOWN');
    pkiVerdict = () => ({ ...verdict, externalId: 'nobody-has-this' });
    expect((await failure(certLogin([c.certPem]))).code).toBe('INVALID_AUTH');
    pkiVerdict = () => ({ ...verdict, isAuthEnabled: false });
    expect((await failure(certLogin([c.certPem]))).code).toBe('INVALID_AUTH');
    pkiVerdict = () => ({ ...verdict, trusted: false });
    expect((await failure(certLogin([c.certPem]))).code).toBe('INVALID_AUTH');
    const strictPolicy = await policies.create(fullPolicy({ cert: { allowExpiredCerts: false } }));
    await identities.update(identity.id, { authPolicyId: strictPolicy.id }, 'patch');
    pkiVerdict = () => ({ ...verdict, expired: true });
    expect((await failure(certLogin([c.certPem]))).code).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('CERT_EXPIRED');
    pkiVerdict = () => null;
  });

  it('refuses without a certificate, or with garbage', async () => {
    expect((await failure(certLogin([]))).code).toBe('INVALID_AUTH');
    expect((await failure(certLogin(['not a certificate']))).code).toBe('INVALID_AUTH');
  });
  it("reports every attempt: the certificate's identity and authenticator when found, nothing of an unknown one", async () => {
    const c = await issueClientCertificate(pki, `reported-${++n}`);
    const u = await certUser(c.certPem);
    const notAllowed = await issueClientCertificate(pki, `reported-off-${n}`);
    const off = await certUser(notAllowed.certPem, fullPolicy({ cert: { allowed: false } }));
    const stranger = await issueClientCertificate(strangerPki, `reported-stranger-${n}`);
    const externalId = `reported-ext-${n}`;
    const byClaim = await identities.create({ name: `reported-claim-${n}`, type: 'User', isAdmin: false, externalId });
    const viaCa = await issueClientCertificate(strangerPki, `reported-ca-${n}`);
    const from = attempts.all.length;
    const { session } = await certLogin([c.certPem]);
    await failure(certLogin([]));
    await failure(certLogin(['not a certificate']));
    pkiVerdict = () => null;
    await failure(certLogin([stranger.certPem]));
    await failure(certLogin([notAllowed.certPem]));
    pkiVerdict = () => ({
      trusted: true,
      issuer: 'ca',
      caId: 'ca1',
      isAuthEnabled: true,
      externalId,
      fingerprint: fp(viaCa.certPem),
    });
    const claimed = await certLogin([viaCa.certPem]);
    pkiVerdict = () => null;
    expect(attempts.all.slice(from).map(({ at: _at, ...a }) => a)).toEqual([
      {
        method: 'cert',
        outcome: 'succeeded',
        identityId: u.identity.id,
        identityName: u.identity.name,
        authenticatorId: u.authenticatorId,
        apiSessionId: session.id,
      },
      { method: 'cert', outcome: 'failed', reason: 'INVALID_AUTH' }, // no certificate
      { method: 'cert', outcome: 'failed', reason: 'INVALID_AUTH' }, // not a certificate
      { method: 'cert', outcome: 'failed', reason: 'INVALID_AUTH' }, // a certificate nobody knows
      {
        method: 'cert',
        outcome: 'failed',
        identityId: off.identity.id,
        identityName: off.identity.name,
        authenticatorId: off.authenticatorId,
        reason: 'INVALID_AUTH',
      },
      // Found through the CA's externalIdClaim: an identity, no authenticator.
      {
        method: 'cert',
        outcome: 'succeeded',
        identityId: byClaim.id,
        identityName: byClaim.name,
        apiSessionId: claimed.session.id,
      },
    ]);
  });
});

describe('external JWT authentication and the secondary factor', () => {
  let key: SigningKey;
  let signerId: string;
  let otherKey: SigningKey;
  let otherSignerId: string;
  const issuer = 'https://idp.test';

  beforeAll(async () => {
    key = await newSigningKey('idp-key');
    otherKey = await newSigningKey('other-key');
    signerId = (
      await signers.create({
        name: 'idp',
        enabled: true,
        issuer,
        audience: 'ziti',
        certPem: await certificateFor(key, 'idp'),
        kid: 'idp-key',
        externalAuthUrl: 'https://idp.test/login',
      })
    ).id;
    otherSignerId = (
      await signers.create({
        name: 'other',
        enabled: true,
        issuer: 'https://other.test',
        audience: 'ziti',
        certPem: await certificateFor(otherKey, 'other'),
        kid: 'other-key',
        useExternalId: true,
        claimsProperty: 'email',
      })
    ).id;
  });

  const jwtLogin = (token: string | undefined) =>
    auth.authenticate({
      method: 'ext-jwt',
      remoteAddress: '127.0.0.1',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    });

  it('finds the identity by id (sub) or by external id (a claims property); refuses unknown ones', async () => {
    const u = await user();
    const { session } = await jwtLogin(await signToken(key, { issuer, audience: 'ziti', subject: u.identity.id }));
    expect(session).toMatchObject({ identityId: u.identity.id, authMethod: 'ext-jwt', authenticatorId: '' });
    const e = await user({ externalId: `person-${n}@example.com` });
    const byClaim = await jwtLogin(
      await signToken(otherKey, {
        issuer: 'https://other.test',
        audience: 'ziti',
        claims: { email: e.identity.externalId },
      }),
    );
    expect(byClaim.session.identityId).toBe(e.identity.id);
    expect(
      (await failure(jwtLogin(await signToken(key, { issuer, audience: 'ziti', subject: 'no-such-identity' })))).code,
    ).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('IDENTITY');
    expect((await failure(jwtLogin(undefined))).code).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('NO_BEARER_TOKEN');
    expect(
      (
        await failure(
          jwtLogin(await signToken(key, { issuer, audience: 'ziti', subject: u.identity.id, expiresIn: -5 })),
        )
      ).code,
    ).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('EXPIRED');
  });

  it('the auth policy decides: extJwt.allowed, allowedSigners', async () => {
    const off = await user({ policy: fullPolicy({ extJwt: { allowed: false } }) });
    expect(
      (await failure(jwtLogin(await signToken(key, { issuer, audience: 'ziti', subject: off.identity.id })))).code,
    ).toBe('INVALID_AUTH');
    expect(refusals.at(-1)).toBe('EXT_JWT_NOT_ALLOWED');
    const onlyOther = await user({ policy: fullPolicy({ extJwt: { allowedSigners: [otherSignerId] } }) });
    expect(
      (await failure(jwtLogin(await signToken(key, { issuer, audience: 'ziti', subject: onlyOther.identity.id }))))
        .code,
    ).toBe('INVALID_AUTH');
    const onlyThis = await user({ policy: fullPolicy({ extJwt: { allowedSigners: [signerId] } }) });
    await jwtLogin(await signToken(key, { issuer, audience: 'ziti', subject: onlyThis.identity.id }));
  });

  it('requireExtJwtSigner: a session without the JWT is partial; with it, or logged in through that signer, it is not', async () => {
    const u = await user({ policy: fullPolicy({ secondary: { requireExtJwtSigner: signerId } }) });
    const partial = await login(u.username, u.password);
    expect(partial.authQueries).toEqual([
      { typeId: 'EXT-JWT', provider: 'url', id: signerId, httpUrl: 'https://idp.test/login' },
    ]);
    expect(partial.session.requiredExtJwtSigner).toEqual({ id: signerId, externalAuthUrl: 'https://idp.test/login' });
    const jwt = await signToken(key, { issuer, audience: 'ziti', subject: u.identity.id, expiresIn: 30 });
    expect((await login(u.username, u.password, { authorization: `Bearer ${jwt}` })).authQueries).toEqual([]);
    expect((await jwtLogin(jwt)).authQueries).toEqual([]);

    const ok = await auth.verifySecondary({ identityId: u.identity.id, signerId, jwt });
    expect(ok.valid).toBe(true);
    expect(Date.parse(ok.validUntil!)).toBeLessThanOrEqual(Date.now() + 31_000);
    const long = await signToken(key, { issuer, audience: 'ziti', subject: u.identity.id, expiresIn: 3600 });
    expect(
      Date.parse((await auth.verifySecondary({ identityId: u.identity.id, signerId, jwt: long })).validUntil!),
    ).toBeLessThanOrEqual(Date.now() + 61_000);
    const someoneElse = await signToken(key, { issuer, audience: 'ziti', subject: 'another-identity' });
    expect(await auth.verifySecondary({ identityId: u.identity.id, signerId, jwt: someoneElse })).toEqual({
      valid: false,
    });
    const fromOther = await signToken(otherKey, {
      issuer: 'https://other.test',
      audience: 'ziti',
      claims: { email: 'x' },
    });
    expect(await auth.verifySecondary({ identityId: u.identity.id, signerId, jwt: fromOther })).toEqual({
      valid: false,
    });
    expect(await auth.verifySecondary({ identityId: u.identity.id, signerId, jwt: 'garbage' })).toEqual({
      valid: false,
    });
    expect(await auth.verifySecondary({ identityId: u.identity.id, signerId: 'missing', jwt })).toEqual({
      valid: false,
    });
    expect(await auth.verifySecondary({ identityId: '', signerId, jwt })).toEqual({ valid: false });
  });

  it('requireTotp marks the session, and policy changes reach live sessions', async () => {
    const u = await user({ policy: fullPolicy({ secondary: { requireTotp: true } }) });
    const s = await login(u.username, u.password);
    expect(s.authQueries.map((q) => q.typeId)).toEqual(['MFA']);
    await policies.update(u.policyId, { secondary: { requireTotp: false } }, 'patch');
    expect((await bed.sessions.getById(s.session.id, 600))!.requireTotp).toBe(false);
    await policies.update(u.policyId, { secondary: { requireExtJwtSigner: signerId } }, 'patch');
    expect((await bed.sessions.getById(s.session.id, 600))!.requiredExtJwtSigner).toEqual({
      id: signerId,
      externalAuthUrl: 'https://idp.test/login',
    });
    await signers.update(signerId, { externalAuthUrl: 'https://idp.test/login2' }, 'patch');
    expect((await bed.sessions.getById(s.session.id, 600))!.requiredExtJwtSigner).toEqual({
      id: signerId,
      externalAuthUrl: 'https://idp.test/login2',
    });
    await identities.update(u.identity.id, { authPolicyId: 'default' }, 'patch');
    expect((await bed.sessions.getById(s.session.id, 600))!).toMatchObject({
      requireTotp: false,
      requiredExtJwtSigner: null,
    });
    await signers.update(signerId, { externalAuthUrl: 'https://idp.test/login' }, 'patch');
  });
  it('reports every attempt: the identity the JWT names once found, never the JWT or an unknown claim', async () => {
    const u = await user();
    const off = await user({ policy: fullPolicy({ extJwt: { allowed: false } }) });
    const good = await signToken(key, { issuer, audience: 'ziti', subject: u.identity.id });
    const expired = await signToken(key, { issuer, audience: 'ziti', subject: u.identity.id, expiresIn: -5 });
    const stranger = await signToken(key, { issuer, audience: 'ziti', subject: 'reported-no-such-identity' });
    const from = attempts.all.length;
    const { session } = await jwtLogin(good);
    await failure(jwtLogin(undefined));
    await failure(jwtLogin(expired));
    await failure(jwtLogin(stranger));
    await failure(jwtLogin(await signToken(key, { issuer, audience: 'ziti', subject: off.identity.id })));
    const reported = attempts.all.slice(from);
    expect(reported.map(({ at: _at, ...a }) => a)).toEqual([
      {
        method: 'ext-jwt',
        outcome: 'succeeded',
        identityId: u.identity.id,
        identityName: u.identity.name,
        apiSessionId: session.id,
      },
      { method: 'ext-jwt', outcome: 'failed', reason: 'INVALID_AUTH' },
      { method: 'ext-jwt', outcome: 'failed', reason: 'INVALID_AUTH' },
      { method: 'ext-jwt', outcome: 'failed', reason: 'INVALID_AUTH' },
      {
        method: 'ext-jwt',
        outcome: 'failed',
        identityId: off.identity.id,
        identityName: off.identity.name,
        reason: 'INVALID_AUTH',
      },
    ]);
    const text = JSON.stringify(reported);
    for (const token of [good, expired, stranger]) expect(text).not.toContain(token);
    expect(text).not.toContain('reported-no-such-identity');
  });
});

describe('the configTypes a login sends, as its session keeps them', () => {
  /** A fake inventory: knows intercept.v1 and host.v1 by id and name; `down` makes it fail. */
  const known = new Map([
    ['intercept.v1', 'g7cIWbcGg'],
    ['host.v1', 'NH5p4FpGR'],
  ]);
  let down = false;
  const asked: string[][] = [];
  const unresolved: { err: unknown; detail: object }[] = [];
  const resolving = () =>
    new AuthenticationService({
      ...authDeps(),
      configTypes: {
        ids: async (values) => {
          asked.push(values);
          if (down) throw new ApiError('SERVICE_UNAVAILABLE');
          const ids = new Set(values.flatMap((v) => ([...known.values()].includes(v) ? [v] : (known.get(v) ?? []))));
          return [...ids];
        },
      },
      onConfigTypesUnresolved: (err, detail) => unresolved.push({ err, detail }),
    });
  const loginWith = (service: AuthenticationService, username: string, password: string, configTypes?: string[]) =>
    service.authenticate({
      method: 'password',
      username,
      password,
      remoteAddress: '127.0.0.1',
      ...(configTypes ? { configTypes } : {}),
    });

  it('keeps the ids inventory maps them to; asks only when there are some, and never for `all`', async () => {
    const u = await user();
    const service = resolving();
    asked.length = 0;
    const { session } = await loginWith(service, u.username, u.password, ['intercept.v1', 'nope', 'host.v1', 'nope']);
    expect(session.configTypes).toEqual(['g7cIWbcGg', 'NH5p4FpGR']);
    expect((await bed.sessions.getById(session.id, 600))!.configTypes).toEqual(['g7cIWbcGg', 'NH5p4FpGR']);
    // Sent once each.
    expect(asked).toEqual([['intercept.v1', 'nope', 'host.v1']]);
    expect((await loginWith(service, u.username, u.password)).session.configTypes).toEqual([]);
    expect((await loginWith(service, u.username, u.password, [])).session.configTypes).toEqual([]);
    expect((await loginWith(service, u.username, u.password, ['host.v1', 'all'])).session.configTypes).toEqual(['all']);
    expect(asked).toHaveLength(1);
  });

  it('when inventory does not answer, the login still succeeds with the values as sent, and says why', async () => {
    const u = await user();
    const service = resolving();
    down = true;
    try {
      const from = unresolved.length;
      const { session, authQueries } = await loginWith(service, u.username, u.password, [
        'intercept.v1',
        'intercept.v1',
        'x',
      ]);
      expect(authQueries).toEqual([]);
      expect(session.configTypes).toEqual(['intercept.v1', 'x']);
      expect(unresolved.slice(from)).toEqual([
        {
          err: expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }),
          detail: { identityId: u.identity.id, values: 2 },
        },
      ]);
      expect(JSON.stringify(unresolved.slice(from).map((r) => r.detail))).not.toContain(u.password);
    } finally {
      down = false;
    }
  });

  it('without a resolver (no inventory wired) the values are kept as sent, once each', async () => {
    const u = await user();
    expect((await login(u.username, u.password, { configTypes: ['host.v1', 'host.v1'] })).session.configTypes).toEqual([
      'host.v1',
    ]);
  });
});
