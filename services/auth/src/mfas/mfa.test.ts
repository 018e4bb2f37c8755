import { ApiError } from '@ziti/contracts';
import { type ApiSessionRecord, SecretBox } from '@ziti/platform';
import { createGuardrails, generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OtplibTotp, PngQrCodes } from './otplib-totp.adapter.ts';
import { MfaService, newRecoveryCode } from './mfas.domain.ts';
import { RecordedAttempts, authTestBed, seed } from '../../test/authentication/support.ts';

type Bed = Awaited<ReturnType<typeof authTestBed>>;
let bed: Bed;
let mfa: MfaService;
const attempts = new RecordedAttempts();
const box = new SecretBox(SecretBox.generateSecret());
const guardrails = createGuardrails({ MIN_SECRET_BYTES: 10 });
let n = 0;

async function newIdentity(): Promise<string> {
  const id = `mfa-${++n}`;
  const now = new Date();
  await bed.work((s) =>
    s.identities.insert({
      id,
      name: `user ${n}`,
      typeId: 'Default',
      isAdmin: false,
      isDefaultAdmin: false,
      roleAttributes: [],
      externalId: null,
      authPolicyId: 'default',
      disabled: false,
      disabledAt: null,
      disabledUntil: null,
      defaultHostingPrecedence: null,
      defaultHostingCost: 0,
      serviceHostingCosts: {},
      serviceHostingPrecedences: {},
      appData: {},
      envInfo: {},
      sdkInfo: {},
      tags: {},
      createdAt: now,
      updatedAt: now,
    }),
  );
  return id;
}

async function session(identityId: string, isMfaRequired = false): Promise<string> {
  const id = `s-${++n}`;
  const record: ApiSessionRecord = {
    id,
    token: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    identityId,
    identityName: 'x',
    isAdmin: false,
    authenticatorId: 'a',
    authMethod: 'password',
    ipAddress: '127.0.0.1',
    configTypes: [],
    isMfaRequired,
    isMfaComplete: false,
    tags: {},
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
  };
  await bed.sessions.create(record, 600);
  return id;
}

const code = (secret: string, offsetSeconds = 0) =>
  generate({ secret, guardrails, epoch: Math.floor(Date.now() / 1000) + offsetSeconds });

async function errorCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err.code;
    throw err;
  }
  return 'OK';
}

beforeAll(async () => {
  bed = await authTestBed();
  await seed(bed.work);
  mfa = new MfaService(bed.work, bed.sessions, new OtplibTotp(), new PngQrCodes(), box, {
    issuer: 'openziti.io',
    sessionTtlSeconds: 600,
    attempts,
  });
});
afterAll(() => bed.close());

describe('MFA parameters (ZITI-FACTS §9.1)', () => {
  it('secrets are 16 base32 characters, recovery codes 20 × 6 characters of base32', async () => {
    const id = await newIdentity();
    const r = await mfa.enroll(id);
    expect(r.secret).toMatch(/^[A-Z2-7]{16}$/);
    expect(r.recoveryCodes).toHaveLength(20);
    for (const c of r.recoveryCodes) expect(c).toMatch(/^[A-Z2-7]{6}$/);
    expect(new Set(Array.from({ length: 50 }, newRecoveryCode)).size).toBeGreaterThan(45);
    expect(mfa.provisioningUrl('Jane Doe', r.secret)).toBe(
      `otpauth://totp/openziti.io:Jane%20Doe?issuer=openziti.io&secret=${r.secret}`,
    );
  });

  it('TOTP accepts t−2 … t+2 steps and nothing further', async () => {
    const totp = new OtplibTotp();
    const secret = totp.newSecret();
    const at = new Date();
    const epoch = Math.floor(at.getTime() / 1000);
    const step = Math.floor(epoch / 30) * 30;
    for (const k of [-2, -1, 0, 1, 2])
      expect(await totp.verify(secret, await generate({ secret, guardrails, epoch: step + k * 30 + 1 }), at)).toBe(
        true,
      );
    for (const k of [-4, 4])
      expect(await totp.verify(secret, await generate({ secret, guardrails, epoch: step + k * 30 + 1 }), at)).toBe(
        false,
      );
    expect(await totp.verify(secret, 'ABCDEF', at)).toBe(false);
    expect(await totp.verify(secret, '12345', at)).toBe(false);
  });

  it('seals the secret and the recovery codes at rest, bound to the identity', async () => {
    const id = await newIdentity();
    const r = await mfa.enroll(id);
    const stored = await bed.work((s) => s.mfa.getByIdentity(id));
    expect(stored!.sealedSecret).not.toContain(r.secret);
    expect(SecretBox.isToken(stored!.sealedSecret)).toBe(true);
    expect(stored!.sealedRecoveryCodes).not.toContain(r.recoveryCodes[0]);
    expect(() => box.decryptString(stored!.sealedSecret, { context: 'mfa:someone-else' })).toThrow();
  });

  it('the QR code is a 256×256 PNG', async () => {
    const id = await newIdentity();
    await mfa.enroll(id);
    const png = await mfa.qrCode(id, 'user');
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.readUInt32BE(16)).toBe(256);
    expect(png.readUInt32BE(20)).toBe(256);
  });
});

describe('the MFA state machine (ZITI-FACTS §9.2, §9.3)', () => {
  it('no MFA: every operation answers its "not there" error', async () => {
    const id = await newIdentity();
    const sid = await session(id);
    expect(await errorCode(mfa.get(id))).toBe('NOT_FOUND');
    expect(await errorCode(mfa.qrCode(id, 'x'))).toBe('MFA_ENROLLMENT_NOT_STARTED');
    expect(await errorCode(mfa.verify(id, sid, '123456'))).toBe('MFA_ENROLLMENT_NOT_STARTED');
    expect(await errorCode(mfa.remove(id, undefined))).toBe('NOT_FOUND');
    expect(await errorCode(mfa.recoveryCodes(id, '123456'))).toBe('MFA_ENROLLMENT_NOT_STARTED');
    expect(await errorCode(mfa.regenerateRecoveryCodes(id, '123456'))).toBe('MFA_ENROLLMENT_NOT_STARTED');
    expect(await errorCode(mfa.authenticate(id, sid, '123456'))).toBe('MFA_NOT_ENROLLED');
  });

  it('enrolled, unverified: a second enroll is MFA_EXISTS; verify takes only TOTP; authenticate is not enrolled yet; removal needs no code', async () => {
    const id = await newIdentity();
    const sid = await session(id);
    const r = await mfa.enroll(id);
    expect(await errorCode(mfa.enroll(id))).toBe('MFA_EXISTS');
    expect((await mfa.get(id)).isVerified).toBe(false);
    expect(await errorCode(mfa.authenticate(id, sid, await code(r.secret)))).toBe('MFA_NOT_ENROLLED');
    expect(await errorCode(mfa.recoveryCodes(id, await code(r.secret)))).toBe('MFA_ENROLLMENT_NOT_STARTED');
    expect(await errorCode(mfa.verify(id, sid, r.recoveryCodes[0]!))).toBe('MFA_INVALID_TOKEN');
    expect(await errorCode(mfa.verify(id, sid, '000000'))).toBe('MFA_INVALID_TOKEN');
    expect(await errorCode(mfa.verify(id, sid, ''))).toBe('MFA_INVALID_TOKEN');
    await mfa.remove(id, undefined);
    expect(await errorCode(mfa.get(id))).toBe('NOT_FOUND');
  });

  it('verification completes enrollment and this session; then QR and verify are gone', async () => {
    const id = await newIdentity();
    const sid = await session(id);
    const r = await mfa.enroll(id);
    await mfa.verify(id, sid, await code(r.secret));
    expect((await mfa.get(id)).isVerified).toBe(true);
    const s = await bed.sessions.getById(sid, 600);
    expect(s).toMatchObject({ isMfaRequired: true, isMfaComplete: true });
    expect(await errorCode(mfa.qrCode(id, 'x'))).toBe('NOT_FOUND');
    expect(await errorCode(mfa.verify(id, sid, await code(r.secret)))).toBe('NOT_FOUND');
    expect(await mfa.verifiedAmong([id, 'nobody'])).toEqual(new Set([id]));
  });

  it('verified: authenticate with TOTP or a single-use recovery code completes the session', async () => {
    const id = await newIdentity();
    const r = await mfa.enroll(id);
    await mfa.verify(id, await session(id), await code(r.secret));

    const s1 = await session(id, true);
    expect(await errorCode(mfa.authenticate(id, s1, '000000'))).toBe('MFA_INVALID_TOKEN');
    expect(await errorCode(mfa.authenticate(id, s1, ''))).toBe('MFA_INVALID_TOKEN');
    expect((await bed.sessions.getById(s1, 600))!.isMfaComplete).toBe(false);
    await mfa.authenticate(id, s1, await code(r.secret));
    expect((await bed.sessions.getById(s1, 600))!.isMfaComplete).toBe(true);

    const s2 = await session(id, true);
    const recovery = r.recoveryCodes[3]!;
    await mfa.authenticate(id, s2, recovery.toLowerCase());
    expect((await bed.sessions.getById(s2, 600))!.isMfaComplete).toBe(true);
    const s3 = await session(id, true);
    expect(await errorCode(mfa.authenticate(id, s3, recovery))).toBe('MFA_INVALID_TOKEN');
    expect((await mfa.get(id)).recoveryCodes).toHaveLength(19);
  });

  it('recovery codes: shown against TOTP only; regenerated against TOTP or a recovery code, the old ones then fail', async () => {
    const id = await newIdentity();
    const r = await mfa.enroll(id);
    await mfa.verify(id, await session(id), await code(r.secret));
    expect(await errorCode(mfa.recoveryCodes(id, undefined))).toBe('MFA_INVALID_TOKEN');
    expect(await errorCode(mfa.recoveryCodes(id, r.recoveryCodes[0]))).toBe('MFA_INVALID_TOKEN');
    expect((await mfa.recoveryCodes(id, await code(r.secret))).recoveryCodes).toEqual(r.recoveryCodes);
    expect(await errorCode(mfa.regenerateRecoveryCodes(id, 'WRONG1'))).toBe('MFA_INVALID_TOKEN');
    await mfa.regenerateRecoveryCodes(id, r.recoveryCodes[0]!);
    const fresh = (await mfa.recoveryCodes(id, await code(r.secret))).recoveryCodes;
    expect(fresh).toHaveLength(20);
    expect(fresh).not.toEqual(r.recoveryCodes);
    expect(await errorCode(mfa.authenticate(id, await session(id, true), r.recoveryCodes[1]!))).toBe(
      'MFA_INVALID_TOKEN',
    );
    await mfa.regenerateRecoveryCodes(id, await code(r.secret));
  });

  it('removing a verified MFA needs a TOTP or recovery code', async () => {
    const id = await newIdentity();
    const r = await mfa.enroll(id);
    await mfa.verify(id, await session(id), await code(r.secret));
    expect(await errorCode(mfa.remove(id, undefined))).toBe('MFA_INVALID_TOKEN');
    expect(await errorCode(mfa.remove(id, '000000'))).toBe('MFA_INVALID_TOKEN');
    await mfa.remove(id, r.recoveryCodes[5]);
    expect(await errorCode(mfa.get(id))).toBe('NOT_FOUND');

    const id2 = await newIdentity();
    const r2 = await mfa.enroll(id2);
    await mfa.verify(id2, await session(id2), await code(r2.secret));
    await mfa.remove(id2, await code(r2.secret));
    expect(await mfa.verifiedAmong([id2])).toEqual(new Set());
  });

  it('an administrator removes MFA; sessions keep their MFA state (a waiting one keeps waiting); unknown identities are 404', async () => {
    const id = await newIdentity();
    const r = await mfa.enroll(id);
    const completed = await session(id);
    await mfa.verify(id, completed, await code(r.secret));
    const waiting = await session(id, true);
    await mfa.removeForIdentity(id);
    expect(await errorCode(mfa.get(id))).toBe('NOT_FOUND');
    // As in the reference: no second factor for free; it can only log out (or lapse).
    expect(await bed.sessions.getById(waiting, 600)).toMatchObject({ isMfaRequired: true, isMfaComplete: false });
    expect(await bed.sessions.getById(completed, 600)).toMatchObject({ isMfaRequired: true, isMfaComplete: true });
    expect(await errorCode(mfa.authenticate(id, waiting, await code(r.secret)))).toBe('MFA_NOT_ENROLLED');
    expect(await errorCode(mfa.removeForIdentity('no-such-identity'))).toBe('NOT_FOUND');
  });
});

describe('every /authenticate/mfa code check is reported as an attempt (issue 24)', () => {
  it('successes and failures, with the identity, the session and the error code the caller got, never the code', async () => {
    const id = await newIdentity();
    const r = await mfa.enroll(id);
    const notYet = await session(id, true);
    const from = attempts.all.length;
    expect(await errorCode(mfa.authenticate(id, notYet, await code(r.secret)))).toBe('MFA_NOT_ENROLLED');
    await mfa.verify(id, await session(id), await code(r.secret));
    const s1 = await session(id, true);
    expect(await errorCode(mfa.authenticate(id, s1, '000000'))).toBe('MFA_INVALID_TOKEN');
    const totp = await code(r.secret);
    await mfa.authenticate(id, s1, totp);
    const recovery = r.recoveryCodes[7]!;
    const s2 = await session(id, true);
    await mfa.authenticate(id, s2, recovery);
    // Enrollment's verification is not an authentication: only the four checks above are reported.
    const reported = attempts.all.slice(from);
    expect(reported.map(({ at: _at, ...a }) => a)).toEqual([
      { method: 'mfa', identityId: id, apiSessionId: notYet, outcome: 'failed', reason: 'MFA_NOT_ENROLLED' },
      { method: 'mfa', identityId: id, apiSessionId: s1, outcome: 'failed', reason: 'MFA_INVALID_TOKEN' },
      { method: 'mfa', identityId: id, apiSessionId: s1, outcome: 'succeeded' },
      { method: 'mfa', identityId: id, apiSessionId: s2, outcome: 'succeeded' },
    ]);
    for (const a of reported) expect(a.at).toBeInstanceOf(Date);
    const text = JSON.stringify(reported);
    for (const secret of [totp, recovery, '000000', r.secret]) expect(text).not.toContain(secret);
  });
});
