import { ApiError } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertPasswordMeetsPolicy,
  allowsSigner,
  normalizePrimary,
  normalizeSecondary,
} from '../../src/auth-policies/auth-policy.domain.ts';
import { AuthPolicyService } from '../../src/auth-policies/auth-policies.domain.ts';
import { ExternalJwtSignerService } from '../../src/external-jwt-signers/external-jwt-signers.domain.ts';
import { IdentityService } from '../../src/identities/identities.domain.ts';
import { IdentityTraceService, parseGoDuration } from '../../src/identity-traces/identity-traces.domain.ts';
import { SessionFactorSync } from '../../src/api-sessions/session-factors.domain.ts';
import { authTestBed, seed } from './support.ts';

type Bed = Awaited<ReturnType<typeof authTestBed>>;
let bed: Bed;
let policies: AuthPolicyService;
let signers: ExternalJwtSignerService;
let identities: IdentityService;
let n = 0;

async function failure(
  p: Promise<unknown> | (() => unknown),
): Promise<{ code: string; cause?: Record<string, unknown> }> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    if (err instanceof ApiError)
      return { code: err.code, ...(err.cause ? { cause: err.cause as Record<string, unknown> } : {}) };
    throw err;
  }
  return { code: 'OK' };
}

const body = (o: Record<string, unknown> = {}) => ({
  name: `p-${++n}`,
  primary: {
    cert: { allowed: true, allowExpiredCerts: false },
    updb: {
      allowed: true,
      minPasswordLength: 8,
      requireSpecialChar: true,
      requireNumberChar: false,
      requireMixedCase: true,
      maxAttempts: 3,
      lockoutDurationMinutes: 10,
    },
    extJwt: { allowed: false, allowedSigners: [] },
  },
  secondary: { requireTotp: true, requireExtJwtSigner: null },
  ...o,
});

beforeAll(async () => {
  bed = await authTestBed();
  await seed(bed.work);
  const sync = new SessionFactorSync(bed.work, bed.sessions, 600);
  policies = new AuthPolicyService(bed.work, sync);
  signers = new ExternalJwtSignerService(bed.work, sync);
  identities = new IdentityService(bed.work, bed.sessions, 600);
});
afterAll(() => bed.close());

describe('auth policy rules', () => {
  it('normalises like the reference store: min length 5..100, negative counts 0, missing fields defaulted', () => {
    const p = normalizePrimary({ updb: { minPasswordLength: 2, maxAttempts: -3, lockoutDurationMinutes: -1 } });
    expect(p.updb).toMatchObject({ minPasswordLength: 5, maxAttempts: 0, lockoutDurationMinutes: 0, allowed: true });
    expect(normalizePrimary({ updb: { minPasswordLength: 500 } }).updb.minPasswordLength).toBe(100);
    expect(p.cert).toEqual({ allowed: true, allowExpiredCerts: true });
    expect(normalizePrimary({ extJwt: { allowedSigners: ['a', 'a', 'b'] } }).extJwt.allowedSigners).toEqual(['a', 'b']);
    expect(normalizeSecondary({ requireExtJwtSigner: '' })).toEqual({ requireTotp: false, requireExtJwtSigner: null });
  });

  it('password rules: length in characters, mixed case, digit, special character', () => {
    const updb = normalizePrimary({
      updb: { minPasswordLength: 6, requireMixedCase: true, requireNumberChar: true, requireSpecialChar: true },
    }).updb;
    expect(() => assertPasswordMeetsPolicy('Aa1!xx', updb)).not.toThrow();
    expect(() => assertPasswordMeetsPolicy('Éé1!xx', updb)).not.toThrow();
    for (const bad of ['Aa1!x', 'aa1!xx', 'AA1!XX', 'Aa!!xx', 'Aa11xx'])
      expect(() => assertPasswordMeetsPolicy(bad, updb), bad).toThrow(ApiError);
    const lax = normalizePrimary({}).updb;
    expect(() => assertPasswordMeetsPolicy('abcde', lax)).not.toThrow();
  });

  it('allowed signers: empty means any signer, when ext-jwt is allowed at all', () => {
    expect(allowsSigner(normalizePrimary({}), 'x')).toBe(true);
    expect(allowsSigner(normalizePrimary({ extJwt: { allowedSigners: ['y'] } }), 'x')).toBe(false);
    expect(allowsSigner(normalizePrimary({ extJwt: { allowed: false } }), 'x')).toBe(false);
  });
});

describe('auth policy administration', () => {
  it('creates, reads, patches nested sections (null → zero value) and replaces', async () => {
    const created = await policies.create(body());
    expect(created.primary.updb).toMatchObject({ minPasswordLength: 8, maxAttempts: 3 });
    await policies.update(
      created.id,
      { primary: { updb: { maxAttempts: 7, requireMixedCase: null } }, secondary: { requireTotp: false } },
      'patch',
    );
    const patched = await policies.get(created.id);
    expect(patched.primary.updb).toMatchObject({
      maxAttempts: 7,
      requireMixedCase: false,
      requireSpecialChar: true,
      minPasswordLength: 8,
      lockoutDurationMinutes: 10,
    });
    expect(patched.primary.cert.allowExpiredCerts).toBe(false);
    expect(patched.secondary.requireTotp).toBe(false);
    expect(patched.name).toBe(created.name);
    await policies.update(created.id, { tags: { team: 'a' } }, 'patch');
    expect((await policies.get(created.id)).tags).toEqual({ team: 'a' });
    await policies.update(created.id, body({ name: 'replaced' }) as never, 'replace');
    const replaced = await policies.get(created.id);
    expect(replaced.name).toBe('replaced');
    expect(replaced.tags).toEqual({});
    expect((await failure(policies.update(created.id, { name: null }, 'patch'))).cause?.field).toBe('name');
  });

  it('a duplicate name is a field error', async () => {
    const a = await policies.create(body());
    const f = await failure(policies.create(body({ name: a.name })));
    expect(f.code).toBe('COULD_NOT_VALIDATE');
    expect(f.cause).toMatchObject({ field: 'name' });
  });

  it('referenced signers must exist (404 with the field)', async () => {
    const f = await failure(
      policies.create(body({ primary: { ...body().primary, extJwt: { allowed: true, allowedSigners: ['ghost'] } } })),
    );
    expect(f).toMatchObject({
      code: 'NOT_FOUND',
      cause: { field: 'primary.extJwt.allowedExtJwtSigners[0]', value: 'ghost' },
    });
    const g = await failure(policies.create(body({ secondary: { requireTotp: false, requireExtJwtSigner: 'ghost' } })));
    expect(g).toMatchObject({ code: 'NOT_FOUND', cause: { field: 'secondary.requiredExtJwtSigner' } });
    const s = await signers.create({
      name: `s-${++n}`,
      issuer: `https://i${n}`,
      enabled: true,
      audience: null,
      jwksEndpoint: 'https://i/jwks',
    });
    const p = await policies.create(body({ secondary: { requireTotp: false, requireExtJwtSigner: s.id } }));
    // A signer named by a policy can not be deleted.
    const d = await failure(signers.delete(s.id));
    expect(d).toMatchObject({ code: 'CAN_NOT_DELETE_REFERENCED_ENTITY', cause: { value: `[${p.id}]` } });
    await policies.delete(p.id);
    await signers.delete(s.id);
    expect((await failure(signers.get(s.id))).code).toBe('NOT_FOUND');
  });

  it('a policy in use can not be deleted (409), the default one never (400); unknown ids are 404', async () => {
    const p = await policies.create(body());
    const identity = await identities.create({ name: `uses-${++n}`, type: 'User', isAdmin: false, authPolicyId: p.id });
    const f = await failure(policies.delete(p.id));
    expect(f).toMatchObject({
      code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
      cause: { field: 'authPolicyId', value: `[${identity.id}]` },
    });
    expect((await failure(policies.delete('default'))).code).toBe('CAN_NOT_DELETE_REFERENCED_ENTITY');
    await identities.delete(identity.id);
    await policies.delete(p.id);
    expect((await failure(policies.get(p.id))).code).toBe('NOT_FOUND');
    expect((await failure(policies.delete('nope'))).code).toBe('NOT_FOUND');
  });

  it('lists with ZitiQL on the dotted fields', async () => {
    const p = await policies.create(body({ secondary: { requireTotp: true, requireExtJwtSigner: null } }));
    const page = await policies.list({
      filter: `secondary.requireTotp = true and primary.updb.maxAttempts = 3 and name = "${p.name}"`,
    });
    expect(page.items.map((x) => x.id)).toEqual([p.id]);
    const none = await policies.list({ filter: `primary.updb.minPasswordLength > 50` });
    expect(none.totalCount).toBe(0);
    expect(page.filterableFields).toContain('primary.extJwt.allowedSigners');
  });
});

describe('identity traces', () => {
  it('parses Go durations', () => {
    expect(parseGoDuration('10m')).toBe(600_000);
    expect(parseGoDuration('1h30m')).toBe(5_400_000);
    expect(parseGoDuration('1.5h')).toBe(5_400_000);
    expect(parseGoDuration('300ms')).toBe(300);
    expect(parseGoDuration('-5s')).toBe(-5000);
    expect(parseGoDuration('10')).toBeNull();
    expect(parseGoDuration('ten minutes')).toBeNull();
  });

  it('stores and answers the trace; disabling clears it', async () => {
    const traces = new IdentityTraceService(bed.work);
    const identity = await identities.create({ name: `traced-${++n}`, type: 'User', isAdmin: false });
    const t = await traces.set(identity.id, { enabled: true, duration: '2h', channels: ['a', 'a', 'b'] });
    expect(t.traceId).toBeTruthy();
    expect(t.until!.getTime() - Date.now()).toBeGreaterThan(7_000_000);
    expect(t.channels).toEqual(['a', 'b']);
    expect(await bed.work((s) => s.traces.get(identity.id))).toMatchObject({ enabled: true, traceId: t.traceId });
    const named = await traces.set(identity.id, { enabled: true, traceId: 'my-trace' });
    expect(named.traceId).toBe('my-trace');
    expect(named.until!.getTime() - Date.now()).toBeLessThanOrEqual(600_000);
    const off = await traces.set(identity.id, { enabled: false });
    expect(off).toMatchObject({ enabled: false, traceId: null, until: null });
    expect((await failure(traces.set(identity.id, { enabled: true, duration: 'forever' }))).cause?.field).toBe(
      'duration',
    );
    expect((await failure(traces.set('nobody', { enabled: true }))).code).toBe('NOT_FOUND');
  });
});
